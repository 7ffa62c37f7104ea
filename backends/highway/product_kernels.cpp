#include "highway/product_kernels.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>

namespace rematkit::hwy_backend {

std::optional<Product> Product::of(const Equation& eq) {
  if (!eq.is(Prim::kDotGeneral) || !eq.all_f32) return std::nullopt;
  const rk_equation_view* e = eq.view;
  const DotDims dims = plugin::dot_dims(e);
  const Dims &lc = dims.lhs_contract, &rc = dims.rhs_contract, &lb = dims.lhs_batch, &rb = dims.rhs_batch;
  const Dims a = shape_of(e->inputs[0]), b = shape_of(e->inputs[1]);
  auto in = [](const Dims& list, int64_t d) { return std::find(list.begin(), list.end(), d) != list.end(); };
  // lhs as [batch, free, contract] and rhs as [batch, contract, free]: a batched row-major GEMM
  // whose output is dot_general's (batch, lhs free, rhs free).
  Product p;
  p.lhs = {a, lb};
  p.rhs = {b, rb};
  size_t m = 1, cols = 1, depth = 1, batch = 1;
  for (int64_t d : lb) batch *= static_cast<size_t>(a[d]);
  for (int64_t d = 0; d < static_cast<int64_t>(a.size()); ++d)
    if (!in(lc, d) && !in(lb, d)) p.lhs.perm.push_back(d), m *= static_cast<size_t>(a[d]);
  for (int64_t d : lc) p.lhs.perm.push_back(d), depth *= static_cast<size_t>(a[d]);
  for (int64_t d : rc) p.rhs.perm.push_back(d);
  for (int64_t d = 0; d < static_cast<int64_t>(b.size()); ++d)
    if (!in(rc, d) && !in(rb, d)) p.rhs.perm.push_back(d), cols *= static_cast<size_t>(b[d]);
  p.batch = batch;
  p.m = m;
  p.depth = depth;
  p.cols = cols;
  const size_t permuted = (p.lhs.identity() ? 0 : p.lhs.count()) + (p.rhs.identity() ? 0 : p.rhs.count());
  p.packing = cache_lines(gemm_packing_floats(p.cols, p.depth));
  p.packing_at = p.packing ? cache_lines(permuted) : permuted;
  return p;
}

void Product::run(const float* a, const float* b, float* c, float* workspace, const Epilogue* epilogue) const {
  float* scratch = workspace;
  if (!lhs.identity()) {
    lhs.apply(a, scratch);
    a = scratch;
    scratch += lhs.count();
  }
  if (!rhs.identity()) {
    rhs.apply(b, scratch);
    b = scratch;
  }
  float* packing_buffers = workspace + packing_at;
  auto one = [&](size_t i) {
    // Rows of product i count from i * m in the epilogue's numbering.
    const auto shifted_rows = [&, i](size_t r0, size_t r1, size_t c0, size_t c1) {
      (*epilogue)(i * m + r0, i * m + r1, c0, c1);
    };
    const Epilogue shifted(shifted_rows);
    gemm(a + i * m * depth, b + i * depth * cols, c + i * m * cols, m, cols, depth,
         packing ? packing_buffers + i * packing : nullptr, epilogue ? &shifted : nullptr);
  };
  // A batch of small products (attention's per head, 32x32x16) is done before oneTBB would have
  // handed its tasks out: below 2^20 multiply-adds in all, one after another.
  if (batch == 1 || batch * m * depth * cols < (size_t{1} << 20)) {
    for (size_t i = 0; i < batch; ++i) one(i);
    return;
  }
  tbb::parallel_for(size_t{0}, batch, one);
}

std::optional<GemmKernel> GemmKernel::prepare(const Equation& eq) {
  std::optional<Product> product = Product::of(eq);
  if (!product) return std::nullopt;
  return GemmKernel{std::move(*product)};
}
void GemmKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  product.run(f32(in[0]), f32(in[1]), f32(out[0]), static_cast<float*>(workspace), nullptr);
}

}  // namespace rematkit::hwy_backend
