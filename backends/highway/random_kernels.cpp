#include "highway/random_kernels.hpp"

#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {

std::optional<RandomBitsKernel> RandomBitsKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kRandomBits) || e->num_inputs != 1 || e->inputs[0].dtype != RK_DTYPE_KEY_FRY) return std::nullopt;
  const int64_t width = plugin::int_param(e, "bit_width");
  if (!((width == 32 && e->outputs[0].dtype == RK_DTYPE_U32) || (width == 8 && e->outputs[0].dtype == RK_DTYPE_U8)))
    return std::nullopt;
  const size_t keys = count(e->inputs[0]);
  return RandomBitsKernel{keys, keys ? count(eq.out) / keys : 0, width == 8};
}
void RandomBitsKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  random_bits(static_cast<const uint32_t*>(in[0].data), keys, per_key, low_byte, out[0].data);
}

std::optional<RandomFoldInKernel> RandomFoldInKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kRandomFoldIn) || e->num_inputs != 2 || e->inputs[0].dtype != RK_DTYPE_KEY_FRY ||
      e->inputs[1].dtype != RK_DTYPE_U32 || shape_of(e->inputs[0]) != eq.out)
    return std::nullopt;
  const Dims data = shape_of(e->inputs[1]);
  if (data != eq.out && count(data) != 1) return std::nullopt;
  return RandomFoldInKernel{count(eq.out), data != eq.out};
}
void RandomFoldInKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  random_fold_in(static_cast<const uint32_t*>(in[0].data), static_cast<const uint32_t*>(in[1].data), scalar_data, n,
                 static_cast<uint32_t*>(out[0].data));
}

}  // namespace rematkit::hwy_backend
