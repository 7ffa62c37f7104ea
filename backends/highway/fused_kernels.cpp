#include "highway/fused_kernels.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>

#include "highway/elementwise_costs.hpp"
#include "highway/one_part_fusion.hpp"
#include "highway/primitive_ops.hpp"

namespace rematkit::hwy_backend {
namespace {

// Elementwise parts over their whole shape: chunks in parallel on oneTBB once there are enough,
// each of whole rows where parts reduce rows.
void run_in_chunks(const FusedElementwise& parts, std::span<void* const> values) {
  constexpr size_t kParallelFrom = size_t{1} << 17;
  const size_t n = parts.elements(), row = parts.alignment();
  const size_t chunk = std::max<size_t>(1, (size_t{1} << 14) / row) * row;
  if (n < kParallelFrom) return parts.run(values, 0, n);
  tbb::parallel_for(size_t{0}, (n + chunk - 1) / chunk,
                    [&](size_t c) { parts.run(values, c * chunk, std::min(n, (c + 1) * chunk)); });
}

// A result of the product's shape that no part writes before the last part that reads the product
// (value `product`): each segment reads the product there before the result overwrites it, and no
// workspace holds a second copy. -1 when there is none.
int result_for_product(const plugin::Fusion& fusion, size_t product) {
  size_t last_reader = 0;
  for (size_t j = 1; j < fusion.parts().size(); ++j)
    for (int64_t v : fusion.parts()[j].operands)
      if (v == static_cast<int64_t>(product)) last_reader = j;
  for (size_t j = last_reader; j < fusion.parts().size(); ++j) {
    const int64_t v = static_cast<int64_t>(fusion.num_inputs() + j);
    if (fusion.is_result(v) && fusion.dtype(v) == RK_DTYPE_F32 && fusion.shape(v) == fusion.parts().front().shape)
      return static_cast<int>(v);
  }
  return -1;
}

}  // namespace

FusedBuffers FusedBuffers::of(const plugin::Fusion& fusion) {
  FusedBuffers b;
  b.buffer_of.assign(fusion.num_values(), kInside);
  for (size_t i = 0; i < fusion.num_inputs(); ++i) b.buffer_of[i] = static_cast<int>(i);
  for (size_t o = 0; o < fusion.results().size(); ++o) b.buffer_of[static_cast<size_t>(fusion.results()[o])] = -2 - static_cast<int>(o);
  return b;
}

void FusedBuffers::bind(const rk_tensor_view* in, const rk_tensor_view* out, std::span<void*> values) const {
  for (size_t v = 0; v < buffer_of.size(); ++v) {
    const int b = buffer_of[v];
    if (b >= 0) values[v] = in[b].data;
    else if (b != kInside) values[v] = out[-2 - b].data;
  }
}

std::optional<FusedElementwiseKernel> FusedElementwiseKernel::prepare(const Equation& eq) {
  if (!eq.fusion && runs_as_one_part(eq)) {
    const OnePartFusion one(eq.view);
    const std::optional<plugin::Fusion> fusion = plugin::Fusion::of(one.view());
    std::optional<FusedElementwise> part = fusion ? FusedElementwise::of(*fusion, 0) : std::nullopt;
    if (!part) return std::nullopt;
    FusedElementwiseKernel k{std::make_shared<const FusedElementwise>(std::move(*part)), FusedBuffers::of(*fusion)};
    bool f16 = eq.view->outputs[0].dtype == RK_DTYPE_F16;
    for (size_t i = 0; i < eq.view->num_inputs; ++i) f16 = f16 || eq.view->inputs[i].dtype == RK_DTYPE_F16;
    const bool approximate = half_check(*eq.prim).kind == HalfCheck::Kind::kApprox;
    if (!eq.is(Prim::kPow))  // every lane in the reference math: no estimate
      k.single_ns = half_ns(op_of(kUnaries, *eq.prim), approximate, f16, eq.view->num_inputs, static_cast<double>(count(eq.out)));
    return k;
  }
  if (!eq.fusion || eq.fusion->parts().front().prim == Prim::kDotGeneral) return std::nullopt;
  std::optional<FusedElementwise> parts = FusedElementwise::of(*eq.fusion, 0);
  if (!parts) return std::nullopt;
  return FusedElementwiseKernel{std::make_shared<const FusedElementwise>(std::move(*parts)), FusedBuffers::of(*eq.fusion)};
}

void FusedElementwiseKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  // On this call's stack: a run allocates nothing, and a call that a waiting thread runs meanwhile
  // (oneTBB steals work) has its own.
  std::array<void*, FusedElementwise::kMaxValues> values{};
  const std::span<void*> bound(values.data(), buffers.buffer_of.size());
  buffers.bind(in, out, bound);
  run_in_chunks(*parts, bound);
}

std::optional<FusedProductKernel> FusedProductKernel::prepare(const Equation& eq) {
  if (!eq.fusion || eq.fusion->parts().front().prim != Prim::kDotGeneral) return std::nullopt;
  const plugin::Fusion& fusion = *eq.fusion;
  const auto product_equation = fusion.part_equation(0);
  std::optional<Product> product = Product::of(Equation::of(product_equation.get()));
  if (!product) return std::nullopt;
  std::optional<FusedElementwise> parts = FusedElementwise::of(fusion, 1);
  if (!parts) return std::nullopt;
  FusedProductKernel k{std::move(*product), std::make_shared<const FusedElementwise>(std::move(*parts)), FusedBuffers::of(fusion)};
  k.product_value = fusion.num_inputs();
  for (size_t i = 0; i < 2; ++i) k.product_operands[i] = static_cast<size_t>(fusion.parts().front().operands.at(i));
  // A product's result that only its parts read lives in a result, or else in the workspace.
  if (k.buffers.buffer_of[k.product_value] == FusedBuffers::kInside) k.product_into = result_for_product(fusion, k.product_value);
  if (k.product_in_workspace()) k.product_at = cache_lines(k.product.workspace_floats());
  return k;
}

size_t FusedProductKernel::workspace() const {
  if (product_in_workspace()) return sizeof(float) * (product_at + product.batch * product.m * product.cols);
  return sizeof(float) * product.workspace_floats();
}

void FusedProductKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  std::array<void*, FusedElementwise::kMaxValues> buffers_of_values{};  // on the stack, as above
  const std::span<void*> values(buffers_of_values.data(), buffers.buffer_of.size());
  buffers.bind(in, out, values);
  float* c = values[product_value]  ? static_cast<float*>(values[product_value])
             : product_into >= 0    ? static_cast<float*>(values[static_cast<size_t>(product_into)])
                                    : static_cast<float*>(workspace) + product_at;
  values[product_value] = c;
  const size_t cols = product.cols;
  const auto on_block = [&](size_t row_begin, size_t row_end, size_t col_begin, size_t col_end) {
    for (size_t r = row_begin; r < row_end; ++r) parts->run(values, r * cols + col_begin, r * cols + col_end);
  };
  const Epilogue epilogue(on_block);
  product.run(static_cast<const float*>(values[product_operands[0]]), static_cast<const float*>(values[product_operands[1]]),
              c, static_cast<float*>(workspace), &epilogue);
}

}  // namespace rematkit::hwy_backend
