#include "rematkit/ir/types.hpp"

#include "rematkit/ir/error.hpp"

namespace rematkit {

namespace {

struct DTypeNames {
  DType dtype;
  std::string_view jax, numpy;
};
constexpr DTypeNames kNames[] = {
    {DType::kF32, "f32", "float32"}, {DType::kI32, "i32", "int32"}, {DType::kBool, "bool", "bool"},
    {DType::kBF16, "bf16", "bfloat16"}, {DType::kF16, "f16", "float16"}, {DType::kF64, "f64", "float64"},
    {DType::kI64, "i64", "int64"}, {DType::kU32, "u32", "uint32"}, {DType::kU8, "u8", "uint8"},
    {DType::kI8, "i8", "int8"}, {DType::kKeyFry, "key<fry>", "key<fry>"}, {DType::kC64, "c64", "complex64"},
    {DType::kC128, "c128", "complex128"},
};

const DTypeNames& names_of(DType dtype) {
  for (const DTypeNames& n : kNames)
    if (n.dtype == dtype) return n;
  return kNames[0];
}

}  // namespace

std::string_view dtype_name(DType dtype) { return names_of(dtype).jax; }
std::string_view dtype_numpy_name(DType dtype) { return names_of(dtype).numpy; }

std::optional<DType> parse_dtype(std::string_view text) {
  for (const DTypeNames& n : kNames)
    if (text == n.jax || text == n.numpy) return n.dtype;
  return std::nullopt;
}

bool is_floating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16 || dtype == DType::kF64;
}

bool is_integer(DType dtype) {
  return dtype == DType::kI32 || dtype == DType::kI64 || dtype == DType::kU32 || dtype == DType::kU8 ||
         dtype == DType::kI8;
}

bool is_complex(DType dtype) { return dtype == DType::kC64 || dtype == DType::kC128; }

bool is_inexact(DType dtype) { return is_floating(dtype) || is_complex(dtype); }

DType complex_part_dtype(DType complex) { return complex == DType::kC128 ? DType::kF64 : DType::kF32; }

std::optional<DType> complex_dtype_of(DType part) {
  if (part == DType::kF32) return DType::kC64;
  if (part == DType::kF64) return DType::kC128;
  return std::nullopt;
}

int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kC128: return 16;
    case DType::kC64: case DType::kF64: case DType::kI64: case DType::kKeyFry: return 8;
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kBF16: case DType::kF16: return 2;
    case DType::kBool: case DType::kU8: case DType::kI8: return 1;
  }
  return 4;
}

std::string_view memory_space_name(MemorySpace space) {
  return space == MemorySpace::kDevice ? "device" : "pinned_host";
}

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) fail("the shape " + shape_str(shape) + " has more than 2^63 elements");
  return n;
}

int64_t Type::bytes() const {
  int64_t b = 0;
  if (__builtin_mul_overflow(num_elements(), dtype_bytes(dtype), &b)) fail(str() + " takes more than 2^63 bytes");
  return b;
}

std::string shape_str(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string types_str(const std::vector<Type>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + types[i].str();
  return out;
}

std::string Type::str() const {
  std::string out(dtype_name(dtype));
  if (space == MemorySpace::kPinnedHost) out += "<host>";
  return out + shape_str(shape);
}

}  // namespace rematkit
