#include "equation_view.hpp"

namespace rematkit::plugin_host {

static_assert(static_cast<int32_t>(DType::kF32) == RK_DTYPE_F32 && static_cast<int32_t>(DType::kI32) == RK_DTYPE_I32 &&
              static_cast<int32_t>(DType::kBool) == RK_DTYPE_BOOL && static_cast<int32_t>(DType::kBF16) == RK_DTYPE_BF16 &&
              static_cast<int32_t>(DType::kF16) == RK_DTYPE_F16 && static_cast<int32_t>(DType::kF64) == RK_DTYPE_F64 &&
              static_cast<int32_t>(DType::kI64) == RK_DTYPE_I64 && static_cast<int32_t>(DType::kU32) == RK_DTYPE_U32 &&
              static_cast<int32_t>(DType::kU8) == RK_DTYPE_U8 && static_cast<int32_t>(DType::kI8) == RK_DTYPE_I8 &&
                  static_cast<int32_t>(DType::kKeyFry) == RK_DTYPE_KEY_FRY &&
                  static_cast<int32_t>(DType::kC64) == RK_DTYPE_C64 && static_cast<int32_t>(DType::kC128) == RK_DTYPE_C128,
              "DType's values are the ABI's rk_dtype codes");

rk_type c_type(const Type& t) {
  rk_type out{};
  out.struct_size = sizeof(rk_type);
  out.dtype = dtype_code(t.dtype);
  out.memory_space = t.space == MemorySpace::kDevice ? RK_MEMORY_DEVICE : RK_MEMORY_PINNED_HOST;
  out.rank = t.rank();
  out.shape = t.shape.data();
  return out;
}

CEquationView::CEquationView(std::string_view primitive, const Params& params, const std::vector<Type>& inputs,
                             const std::vector<Type>& outputs, std::string_view site, double flops)
    : primitive_(primitive), site_(site), input_types_(inputs), output_types_(outputs) {
  params_ = values_.params(params);
  for (const Type& t : input_types_) inputs_.push_back(c_type(t));
  for (const Type& t : output_types_) outputs_.push_back(c_type(t));
  view_ = {sizeof(rk_equation_view), primitive_.c_str(), params_.data(), params_.size(),
           inputs_.data(),           inputs_.size(),      outputs_.data(), outputs_.size(),
           site_.c_str(),            flops};
}

}  // namespace rematkit::plugin_host
