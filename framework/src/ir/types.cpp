#include "rematkit/types.hpp"

namespace rematkit {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kI32: return "i32";
    case DType::kBool: return "bool";
  }
  return "?";
}

std::string_view dtype_numpy_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "float32";
    case DType::kI32: return "int32";
    case DType::kBool: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  if (text == "f32" || text == "float32") return DType::kF32;
  if (text == "i32" || text == "int32") return DType::kI32;
  if (text == "bool") return DType::kBool;
  return std::nullopt;
}

bool is_floating(DType dtype) { return dtype == DType::kF32; }

int64_t dtype_bytes(DType dtype) { return dtype == DType::kBool ? 1 : 4; }

std::string_view memory_space_name(MemorySpace space) {
  return space == MemorySpace::kDevice ? "device" : "pinned_host";
}

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
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
