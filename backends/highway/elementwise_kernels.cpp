#include "highway/elementwise_kernels.hpp"

#include <algorithm>

#include "highway/elementwise_costs.hpp"
#include "highway/primitive_ops.hpp"

namespace rematkit::hwy_backend {
std::optional<UnaryKernel> UnaryKernel::prepare(const Equation& eq) {
  if (!eq.prim || !eq.all_f32) return std::nullopt;
  const size_t n = count(eq.out);
  if (eq.is(Prim::kConvertElementType)) return UnaryKernel{Unary::kCopy, n};  // f32 to f32: a copy
  const std::optional<Unary> op = op_of(kUnaries, *eq.prim);
  if (!op) return std::nullopt;
  return UnaryKernel{*op, n};
}
double UnaryKernel::expected_ns() const { return unary_ns(op, static_cast<double>(n)); }
void UnaryKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const { unary(op, f32(in[0]), f32(out[0]), n); }

std::optional<PowKernel> PowKernel::prepare(const Equation& eq) {
  if (!eq.is(Prim::kIntegerPow) || !eq.all_f32) return std::nullopt;
  return PowKernel{plugin::int_param(eq.view, "y"), count(eq.out)};
}
double PowKernel::expected_ns() const { return one_pass_ns(static_cast<double>(n)); }
void PowKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  integer_pow(power, f32(in[0]), f32(out[0]), n);
}

std::optional<BitcastKernel> BitcastKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kBitcastConvertType) || e->num_inputs != 1) return std::nullopt;
  auto word = [](int32_t t) { return t == RK_DTYPE_F32 || t == RK_DTYPE_I32 || t == RK_DTYPE_U32; };
  if (!word(e->inputs[0].dtype) || !word(e->outputs[0].dtype) || shape_of(e->inputs[0]) != eq.out) return std::nullopt;
  return BitcastKernel{count(eq.out)};
}
double BitcastKernel::expected_ns() const { return unary_ns(Unary::kCopy, static_cast<double>(n)); }
void BitcastKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  unary(Unary::kCopy, f32(in[0]), f32(out[0]), n);
}

std::optional<SelectKernel> SelectKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kSelectN)) return std::nullopt;
  if (e->num_inputs != 3 || e->inputs[0].dtype != RK_DTYPE_BOOL || e->inputs[1].dtype != RK_DTYPE_F32) return std::nullopt;
  return SelectKernel{e->inputs[0].rank == 0 && !eq.out.empty(), count(eq.out)};
}
double SelectKernel::expected_ns() const { return one_pass_ns(static_cast<double>(n)); }
void SelectKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  select(static_cast<const uint8_t*>(in[0].data), pred_scalar, f32(in[1]), f32(in[2]), f32(out[0]), n);
}

std::optional<CompareIntKernel> CompareIntKernel::prepare(const Equation& eq) {
  if (!eq.prim) return std::nullopt;
  const std::optional<Compare> op = op_of(kCompares, *eq.prim);
  const rk_equation_view* e = eq.view;
  if (!op) return std::nullopt;
  const int32_t t = e->inputs[0].dtype;
  if ((t != RK_DTYPE_I32 && t != RK_DTYPE_U32) || e->inputs[1].dtype != t) return std::nullopt;
  const Dims a = shape_of(e->inputs[0]), b = shape_of(e->inputs[1]);
  if ((a != eq.out && count(a) != 1) || (b != eq.out && count(b) != 1)) return std::nullopt;
  return CompareIntKernel{*op, a != eq.out, b != eq.out, t == RK_DTYPE_U32, count(eq.out)};
}
void CompareIntKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  compare_ints(op, is_unsigned, in[0].data, a_scalar, in[1].data, b_scalar, static_cast<uint8_t*>(out[0].data), n);
}

std::optional<ConvertToF32Kernel> ConvertToF32Kernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kConvertElementType) || e->num_inputs != 1 || e->outputs[0].dtype != RK_DTYPE_F32 ||
      (e->inputs[0].dtype != RK_DTYPE_BOOL && e->inputs[0].dtype != RK_DTYPE_I32))
    return std::nullopt;
  return ConvertToF32Kernel{e->inputs[0].dtype == RK_DTYPE_BOOL, count(eq.out)};
}
void ConvertToF32Kernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  convert_to_f32(from_bool, in[0].data, false, f32(out[0]), n);
}

}  // namespace rematkit::hwy_backend
