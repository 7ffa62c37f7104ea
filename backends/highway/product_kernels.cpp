#include "highway/product_kernels.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>

#include "strided_product.hpp"

namespace rematkit::hwy_backend {

namespace {

// The elements of `shape`'s dims in `group`.
size_t elements(const Dims& shape, const Dims& group) {
  size_t n = 1;
  for (int64_t d : group) n *= static_cast<size_t>(shape[static_cast<size_t>(d)]);
  return n;
}

// `shape` read as a batch (`batch` dims) of matrices of `rows` x `cols` dims, in place where each
// of those two groups reads as one strided dim (strided_product.hpp), else from a copy permuted
// into that order.
OperandView view_of(const Dims& shape, const Dims& batch, const Dims& rows, const Dims& cols) {
  OperandView v;
  v.permutation.shape = shape;
  for (const Dims* group : {&batch, &rows, &cols}) v.permutation.perm.insert(v.permutation.perm.end(), group->begin(), group->end());
  const std::optional<backends::Dim> row = backends::as_one_dim(shape, rows), col = backends::as_one_dim(shape, cols);
  v.in_place = v.permutation.identity() || (row && col);
  if (v.in_place && !v.permutation.identity()) {
    v.row_stride = static_cast<size_t>(row->stride);
    v.col_stride = static_cast<size_t>(col->stride);
    for (int64_t d : batch) {  // each batch dim on its own: they need not merge
      v.batch_sizes.push_back(shape[static_cast<size_t>(d)]);
      v.batch_strides.push_back(static_cast<size_t>(backends::as_one_dim(shape, {d})->stride));
    }
  } else {  // row-major [batch, rows, cols], as it lies or as its copy lies
    v.row_stride = elements(shape, cols);
    v.col_stride = 1;
    v.batch_sizes = {static_cast<int64_t>(elements(shape, batch))};
    v.batch_strides = {elements(shape, rows) * elements(shape, cols)};
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
  // lhs as [batch, free, contract] and rhs as [batch, contract, free]: a batch of GEMMs whose
  // output is dot_general's (batch, lhs free, rhs free).
  const Dims lhs_free = backends::free_dims(a.size(), lc, lb), rhs_free = backends::free_dims(b.size(), rc, rb);
  Product p;
  p.batch = elements(a, lb);
  p.m = elements(a, lhs_free);
  p.depth = elements(a, lc);
  p.cols = elements(b, rhs_free);
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
