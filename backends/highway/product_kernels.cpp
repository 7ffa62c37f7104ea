#include "highway/product_kernels.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>

namespace rematkit::hwy_backend {

namespace {

// The stride of `group`'s dims merged into one, outermost first (dims of size 1 skipped), or
// nullopt where they do not merge: each dim's stride must be the next one's times its size.
std::optional<size_t> merged_stride(const Dims& shape, const std::vector<size_t>& strides, const Dims& group) {
  std::optional<size_t> inner;
  size_t extent = 1;  // of the dims merged so far, innermost first
  for (auto d = group.rbegin(); d != group.rend(); ++d) {
    const auto size = static_cast<size_t>(shape[static_cast<size_t>(*d)]);
    if (size == 1) continue;
    const size_t stride = strides[static_cast<size_t>(*d)];
    if (inner && stride != *inner * extent) return std::nullopt;
    if (!inner) inner = stride;
    extent *= size;
  }
  return inner.value_or(1);
}

// `shape` read as a batch (`batch` dims) of matrices of `rows` x `cols` dims, in place when those
// two merge, else from a copy permuted into that order.
OperandView view_of(const Dims& shape, const Dims& batch, const Dims& rows, const Dims& cols) {
  OperandView v;
  v.permutation.shape = shape;
  for (const Dims* group : {&batch, &rows, &cols}) v.permutation.perm.insert(v.permutation.perm.end(), group->begin(), group->end());
  std::vector<size_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * static_cast<size_t>(shape[d]);
  const std::optional<size_t> row = merged_stride(shape, strides, rows), col = merged_stride(shape, strides, cols);
  auto size_of = [&](const Dims& group) {
    size_t n = 1;
    for (int64_t d : group) n *= static_cast<size_t>(shape[static_cast<size_t>(d)]);
    return n;
  };
  v.in_place = v.permutation.identity() || (row && col);
  if (v.in_place && !v.permutation.identity()) {
    v.row_stride = *row;
    v.col_stride = *col;
    for (int64_t d : batch) {
      v.batch_sizes.push_back(shape[static_cast<size_t>(d)]);
      v.batch_strides.push_back(strides[static_cast<size_t>(d)]);
    }
  } else {  // row-major [batch, rows, cols], as it lies or as its copy lies
    v.row_stride = size_of(cols);
    v.col_stride = 1;
    v.batch_sizes = {static_cast<int64_t>(size_of(batch))};
    v.batch_strides = {size_of(rows) * size_of(cols)};
  }
  return v;
}

}  // namespace

size_t OperandView::offset(size_t i) const {
  size_t at = 0;
  for (size_t d = batch_sizes.size(); d-- > 0;) {
    const auto size = static_cast<size_t>(batch_sizes[d]);
    at += i % size * batch_strides[d];
    i /= size;
  }
  return at;
}

std::optional<Product> Product::of(const Equation& eq) {
  if (!eq.is(Prim::kDotGeneral) || !eq.all_f32) return std::nullopt;
  const rk_equation_view* e = eq.view;
  const DotDims dims = plugin::dot_dims(e);
  const Dims &lc = dims.lhs_contract, &rc = dims.rhs_contract, &lb = dims.lhs_batch, &rb = dims.rhs_batch;
  const Dims a = shape_of(e->inputs[0]), b = shape_of(e->inputs[1]);
  auto in = [](const Dims& list, int64_t d) { return std::find(list.begin(), list.end(), d) != list.end(); };
  // lhs as [batch, free, contract] and rhs as [batch, contract, free]: a batch of GEMMs whose
  // output is dot_general's (batch, lhs free, rhs free).
  Dims lhs_free, rhs_free;
  for (int64_t d = 0; d < static_cast<int64_t>(a.size()); ++d)
    if (!in(lc, d) && !in(lb, d)) lhs_free.push_back(d);
  for (int64_t d = 0; d < static_cast<int64_t>(b.size()); ++d)
    if (!in(rc, d) && !in(rb, d)) rhs_free.push_back(d);
  Product p;
  auto size_of = [](const Dims& shape, const Dims& group) {
    size_t n = 1;
    for (int64_t d : group) n *= static_cast<size_t>(shape[static_cast<size_t>(d)]);
    return n;
  };
  p.batch = size_of(a, lb);
  p.m = size_of(a, lhs_free);
  p.depth = size_of(a, lc);
  p.cols = size_of(b, rhs_free);
  p.lhs = view_of(a, lb, lhs_free, lc);
  p.rhs = view_of(b, rb, rc, rhs_free);
  const size_t copied = (p.lhs.in_place ? 0 : p.lhs.permutation.count()) + (p.rhs.in_place ? 0 : p.rhs.permutation.count());
  p.packing = cache_lines(gemm_packing_floats(p.m, p.cols, p.depth, p.rhs.col_stride == 1));
  p.packing_at = p.packing ? cache_lines(copied) : copied;
  return p;
}

void Product::run(const float* a, const float* b, float* c, float* workspace, const Epilogue* epilogue) const {
  float* scratch = workspace;
  if (!lhs.in_place) {
    lhs.permutation.apply(a, scratch);
    a = scratch;
    scratch += lhs.permutation.count();
  }
  if (!rhs.in_place) {
    rhs.permutation.apply(b, scratch);
    b = scratch;
  }
  float* packing_buffers = workspace + packing_at;
  auto one = [&](size_t i) {
    // Rows of product i count from i * m in the epilogue's numbering.
    const auto shifted_rows = [&, i](size_t r0, size_t r1, size_t c0, size_t c1) {
      (*epilogue)(i * m + r0, i * m + r1, c0, c1);
    };
    const Epilogue shifted(shifted_rows);
    gemm({a + lhs.offset(i), lhs.row_stride, lhs.col_stride}, {b + rhs.offset(i), rhs.row_stride, rhs.col_stride},
         c + i * m * cols, m, cols, depth, packing ? packing_buffers + i * packing : nullptr, epilogue ? &shifted : nullptr);
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
