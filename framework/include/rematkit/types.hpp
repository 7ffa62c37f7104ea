// Element types, memory spaces and array types (dtype + shape + memory space).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/core_export.hpp"

namespace rematkit {

enum class DType { kF32, kI32, kBool };

// Short name as JAX prints it: f32, i32, bool.
REMATKIT_CORE_EXPORT std::string_view dtype_name(DType dtype);
// NumPy's name, as params print it (convert_element_type[new_dtype=float32]): float32, int32, bool.
REMATKIT_CORE_EXPORT std::string_view dtype_numpy_name(DType dtype);
// Parses f32/float32, i32/int32, bool; nullopt for anything else.
REMATKIT_CORE_EXPORT std::optional<DType> parse_dtype(std::string_view text);
REMATKIT_CORE_EXPORT bool is_floating(DType dtype);
// Bytes one element takes in a residual buffer (bool is one byte, as in XLA).
REMATKIT_CORE_EXPORT int64_t dtype_bytes(DType dtype);

// Where a buffer lives: the accelerator ("device") or pinned host memory (offloaded residuals).
enum class MemorySpace { kDevice, kPinnedHost };
REMATKIT_CORE_EXPORT std::string_view memory_space_name(MemorySpace space);  // "device", "pinned_host"

using Shape = std::vector<int64_t>;
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
  int64_t bytes() const { return num_elements() * dtype_bytes(dtype); }
  // As the grammar prints it: f32[5,4], f32[], bool[8], f32<host>[4,4].
  std::string str() const;
  friend bool operator==(const Type&, const Type&) = default;
};

}  // namespace rematkit
