// Element types, memory spaces and array types (dtype + shape + memory space).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/core_export.hpp"

namespace rematkit {

// The values are the C ABI's rk_dtype codes (checked where the two meet, equation_view.cpp).
// kKeyFry is a threefry PRNG key (key<fry>, jax.random.key's dtype): not a number, 8 bytes.
// kC64 and kC128 are complex: an f32 or f64 real part, then the imaginary part (8 and 16 bytes).
enum class DType : int32_t {
  kF32 = 0, kI32 = 1, kBool = 2, kBF16 = 3, kF16 = 4, kF64 = 5, kI64 = 6, kU32 = 7, kU8 = 8, kI8 = 9, kKeyFry = 10,
  kC64 = 11, kC128 = 12
};
inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kI32, DType::kBool,   DType::kBF16, DType::kF16,
                                       DType::kF64, DType::kI64, DType::kU32,    DType::kU8,   DType::kI8,
                                       DType::kKeyFry, DType::kC64, DType::kC128};
inline int32_t dtype_code(DType dtype) { return static_cast<int32_t>(dtype); }
// What messages about an unsupported dtype say is supported.
inline constexpr std::string_view kSupportedDtypes = "rematkit supports f32, bf16, f16, f64, c64, c128, i8, i32, i64, u8, u32, bool and key<fry>";

// Short name as JAX prints it: f32, bf16, i32, u8, bool, ...
REMATKIT_CORE_EXPORT std::string_view dtype_name(DType dtype);
// NumPy's name, as params print it (convert_element_type[new_dtype=bfloat16]): float32, bfloat16, int32, ...
REMATKIT_CORE_EXPORT std::string_view dtype_numpy_name(DType dtype);
// Parses either name; nullopt for anything else.
REMATKIT_CORE_EXPORT std::optional<DType> parse_dtype(std::string_view text);
REMATKIT_CORE_EXPORT bool is_floating(DType dtype);  // f32, bf16, f16, f64
REMATKIT_CORE_EXPORT bool is_integer(DType dtype);   // i32, i64, u32, u8, i8 (not bool)
REMATKIT_CORE_EXPORT bool is_complex(DType dtype);   // c64, c128
// What JAX differentiates (dtypes.issubdtype(d, np.inexact)): floating or complex.
REMATKIT_CORE_EXPORT bool is_inexact(DType dtype);
// A complex dtype's parts (c64: f32, c128: f64), and the complex dtype of parts (f32: c64, f64: c128;
// nullopt for other dtypes, which lax.complex refuses).
REMATKIT_CORE_EXPORT DType complex_part_dtype(DType complex);
REMATKIT_CORE_EXPORT std::optional<DType> complex_dtype_of(DType part);
// Bytes one element takes in a buffer: its real size (bool is one byte, as in XLA).
REMATKIT_CORE_EXPORT int64_t dtype_bytes(DType dtype);

// Where a buffer lives: the accelerator ("device") or pinned host memory (offloaded residuals).
enum class MemorySpace { kDevice, kPinnedHost };
REMATKIT_CORE_EXPORT std::string_view memory_space_name(MemorySpace space);  // "device", "pinned_host"

using Shape = std::vector<int64_t>;
// A bad-input Error when the product overflows int64 (a shape no machine could hold).
REMATKIT_CORE_EXPORT int64_t num_elements(const Shape& shape);
REMATKIT_CORE_EXPORT std::string shape_str(const Shape& shape);  // "[5,4]", "[]"

struct Type;
// Types as messages list them: "f32[2], f32[3]".
REMATKIT_CORE_EXPORT std::string types_str(const std::vector<Type>& types);

struct REMATKIT_CORE_EXPORT Type {
  DType dtype = DType::kF32;
  Shape shape;
  MemorySpace space = MemorySpace::kDevice;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t num_elements() const { return rematkit::num_elements(shape); }
  int64_t bytes() const;  // a bad-input Error past int64, as num_elements
  // As the grammar prints it: f32[5,4], f32[], bool[8], f32<host>[4,4].
  std::string str() const;
  friend bool operator==(const Type&, const Type&) = default;
};

}  // namespace rematkit
