// Widened bf16/f16 products in cache-sized blocks (onednn_blocked_products.hpp). Each block widens
// the slices of the operands it reads into the workspace (an operand the split does not cut is
// widened whole once per run), runs the f32 matmul primitive of its shape (blocks of equal shape
// share one; oneDNN's primitive cache shares equal descriptors between kernels too) and rounds its
// f32 result straight into the bf16/f16 output, or lets the primitive write an f32 output in place.
// Slices keep their operand's orientation (a transposed operand stays transposed), so the f32
// primitive reads each block as the unblocked product reads the whole.
#include "onednn_blocked_products.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "onednn_widening.hpp"

namespace rematkit_onednn {
namespace {

using Dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

// Block lengths along M, N or K: at least this, so a block keeps the matmul's own kernels busy
// (oneDNN packs the whole other operand again for each block), and multiples of 16 floats, so
// slices start on cache lines.
constexpr int64_t kMinBlock = 64, kBlockMultiple = 16;

// Whether each row (or, read transposed, each column) of an operand is contiguous: then a slice is
// widened in runs, as the whole operand is.
bool contiguous_runs(const Layout& l) {
  const size_t rank = l.dims.size();
  return !transposed(l) || l.dims[rank - 2] == 1 || l.strides[rank - 2] == 1;
}

// The sizes of a product: batch (flattened), M, N, K.
struct Extents {
  int64_t batch, m, n, k;
};

Extents extents_of(const Layout& a, const Layout& b, const Layout& c) {
  const size_t rank = a.dims.size();
  const int64_t m = a.dims[rank - 2], k = a.dims[rank - 1], n = b.dims[rank - 1];
  return {count(c.dims) / (m * n), m, n, k};
}

// A block: where it starts along each dim and how long it is there; `accumulate` adds its products
// to those of the blocks before it (a split along K).
struct Block {
  int64_t batch0, batch, m0, m, n0, n, k0, k;
  bool accumulate;
};

std::vector<Block> blocks_of(const BlockPlan& plan, const Extents& x) {
  std::vector<Block> blocks;
  for (int64_t i = 0; i < plan.blocks(); ++i) {
    Block b{0, x.batch, 0, x.m, 0, x.n, 0, x.k, false};
    const int64_t start = i * plan.size, length = std::min(plan.size, plan.length - start);
    switch (plan.split) {
      case Split::kBatch: b.batch0 = start, b.batch = length; break;
      case Split::kRows: b.m0 = start, b.m = length; break;
      case Split::kColumns: b.n0 = start, b.n = length; break;
      case Split::kContracted: b.k0 = start, b.k = length, b.accumulate = i > 0; break;
    }
    blocks.push_back(b);
  }
  return blocks;
}

// A part of an operand read as (batch, rows, cols): the batch flattened.
struct Slice {
  int64_t batch0, batch, row0, rows, col0, cols;
};

// Element offset of flattened batch index `i` in an operand laid out as `l`.
int64_t batch_offset(const Layout& l, int64_t i) {
  int64_t offset = 0;
  for (size_t d = l.dims.size() - 2; d-- > 0;) {
    offset += i % l.dims[d] * l.strides[d];
    i /= l.dims[d];
  }
  return offset;
}

// Widens slice `s` of the bf16/f16 operand at `from` (laid out as `l`) into `to`, packed in the
// operand's orientation: row after row, or column after column where `l` is transposed. The runs
// are split over the kernel's OpenMP team when there are enough elements.
void widen_slice(const void* from, int32_t dtype, const Layout& l, const Slice& s, float* to) {
  const size_t rank = l.dims.size();
  const int64_t row_stride = l.strides[rank - 2], col_stride = l.strides[rank - 1];
  const bool by_columns = transposed(l);
  const int64_t runs_per_matrix = by_columns ? s.cols : s.rows, run = by_columns ? s.rows : s.cols;
  const int64_t runs = s.batch * runs_per_matrix;
  const auto* h = static_cast<const uint16_t*>(from);
#pragma omp parallel for schedule(static) if (runs * run >= kParallelElements)
  for (int64_t i = 0; i < runs; ++i) {
    const int64_t j = i / runs_per_matrix, o = i % runs_per_matrix;
    const int64_t row = by_columns ? s.row0 : s.row0 + o, col = by_columns ? s.col0 + o : s.col0;
    widen(h + batch_offset(l, s.batch0 + j) + row * row_stride + col * col_stride, dtype, run, to + i * run);
  }
}

// Rounds block `b`'s f32 result (packed [batch, m, n]) into the output, a row-major [batch, M, N].
void narrow_block(const float* from, int32_t dtype, const Block& b, const Extents& x, void* to) {
  const int64_t runs = b.batch * b.m;
  auto* h = static_cast<uint16_t*>(to);
#pragma omp parallel for schedule(static) if (runs * b.n >= kParallelElements)
  for (int64_t i = 0; i < runs; ++i) {
    const int64_t j = i / b.m, row = i % b.m;
    narrow(from + i * b.n, dtype, b.n, h + ((b.batch0 + j) * x.m + b.m0 + row) * x.n + b.n0);
  }
}

// Strides of a packed (batch, rows, cols) or (rows, cols) operand, row after row or column after
// column.
Dims packed_strides(const Dims& dims, bool by_columns) {
  const size_t rank = dims.size();
  Dims strides(rank);
  const int64_t rows = dims[rank - 2], cols = dims[rank - 1];
  strides[rank - 2] = by_columns ? 1 : cols;
  strides[rank - 1] = by_columns ? rows : 1;
  if (rank == 3) strides[0] = rows * cols;
  return strides;
}

// A product's dims as a block sees them: (batch, rows, cols) where the product is batched.
Dims block_dims(bool batched, int64_t batch, int64_t rows, int64_t cols) {
  return batched ? Dims{batch, rows, cols} : Dims{rows, cols};
}

// One block shape's primitive and the memories its runs point at the block's buffers.
struct BlockPrimitive {
  int64_t batch, m, n, k;
  bool accumulate;
  dnnl::matmul::primitive_desc pd;
  dnnl::primitive primitive;
  dnnl::memory src, weights, dst, scratchpad;
  std::vector<dnnl_exec_arg_t> args;
};

// A product in blocks. Planned with the recipe: its blocks, their primitive descriptors (made for
// the OpenMP team prepare() has set, which fixes their scratchpads) and its workspace; its
// primitives are made by Recipe::make_run, and a run goes through the blocks in order.
class BlockedProduct {
 public:
  BlockedProduct(const dnnl::engine& engine, const rk_equation_view* e, const Layout& a, const Layout& b, const Layout& c,
                 const BlockPlan& plan);
  size_t workspace_bytes() const { return workspace_bytes_; }
  void make(const dnnl::engine& engine);
  void run(const rk_tensor_view* inputs, std::byte* workspace, void* output);

 private:
  size_t primitive_for(const dnnl::engine& engine, const Block& b);

  Layout a_, b_;
  Extents x_;
  bool batched_;
  int32_t dtype_, result_dtype_;
  Split split_;
  std::vector<Block> blocks_;
  std::vector<size_t> primitive_of_;  // per block, an index into primitives_
  std::vector<BlockPrimitive> primitives_;
  size_t a_at_ = 0, b_at_ = 0, c_at_ = 0, scratchpad_at_ = 0, workspace_bytes_ = 0;
  dnnl::stream stream_;
};

// The workspace: a's slice (or all of a, where the split cuts only b), b's, the f32 result of a
// block (of every block, summed, for a split along K) where the output is bf16/f16, and the largest
// scratchpad of the block primitives. The first block is a whole one: the largest.
BlockedProduct::BlockedProduct(const dnnl::engine& engine, const rk_equation_view* e, const Layout& a, const Layout& b,
                               const Layout& c, const BlockPlan& plan)
    : a_(a),
      b_(b),
      x_(extents_of(a, b, c)),
      batched_(a.dims.size() > 2),
      dtype_(e->inputs[0].dtype),
      result_dtype_(e->outputs[0].dtype),
      split_(plan.split),
      blocks_(blocks_of(plan, x_)) {
  for (const Block& block : blocks_) primitive_of_.push_back(primitive_for(engine, block));
  const Block& whole = blocks_.front();
  auto place = [this](int64_t floats) {
    const size_t at = workspace_bytes_;
    workspace_bytes_ = cache_lines(workspace_bytes_ + static_cast<size_t>(floats) * sizeof(float));
    return at;
  };
  a_at_ = place(whole.batch * whole.m * whole.k);
  b_at_ = place(whole.batch * whole.k * whole.n);
  if (is_half(result_dtype_)) c_at_ = place(whole.batch * whole.m * whole.n);
  size_t scratchpad = 0;
  for (const BlockPrimitive& p : primitives_) scratchpad = std::max(scratchpad, p.pd.scratchpad_desc().get_size());
  scratchpad_at_ = workspace_bytes_;
  workspace_bytes_ += scratchpad;
}

// The primitive of block `b`'s shape, made on first sight: operands packed as widen_slice packs
// them; the result packed in the workspace, or in place in an f32 output; a block of a split along
// K after the first adds to the sums before it (oneDNN's sum post-op, beta = 1).
size_t BlockedProduct::primitive_for(const dnnl::engine& engine, const Block& b) {
  for (size_t i = 0; i < primitives_.size(); ++i) {
    const BlockPrimitive& p = primitives_[i];
    if (p.batch == b.batch && p.m == b.m && p.n == b.n && p.k == b.k && p.accumulate == b.accumulate) return i;
  }
  const Dims ad = block_dims(batched_, b.batch, b.m, b.k), bd = block_dims(batched_, b.batch, b.k, b.n);
  const Dims cd = block_dims(batched_, b.batch, b.m, b.n);
  const Dims in_output = batched_ ? Dims{x_.m * x_.n, x_.n, 1} : Dims{x_.n, 1};
  const dnnl::memory::desc am(ad, dt::f32, packed_strides(ad, transposed(a_))), bm(bd, dt::f32, packed_strides(bd, transposed(b_)));
  const dnnl::memory::desc cm(cd, dt::f32, is_half(result_dtype_) ? packed_strides(cd, false) : in_output);
  dnnl::primitive_attr attr;
  if (b.accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  // The oneDNN 2.x API: an operation descriptor, then its primitive descriptor.
  primitives_.push_back({b.batch, b.m, b.n, b.k, b.accumulate,
                         dnnl::matmul::primitive_desc(dnnl::matmul::desc(am, bm, cm), user_scratchpad(attr), engine), {},
                         {}, {}, {}, {}, {}});
  return primitives_.size() - 1;
}

void BlockedProduct::make(const dnnl::engine& engine) {
  for (BlockPrimitive& p : primitives_) {
    p.primitive = dnnl::matmul(p.pd);
    p.src = dnnl::memory(p.pd.src_desc(), engine, nullptr);
    p.weights = dnnl::memory(p.pd.weights_desc(), engine, nullptr);
    p.dst = dnnl::memory(p.pd.dst_desc(), engine, nullptr);
    p.args = {{DNNL_ARG_SRC, p.src.get()}, {DNNL_ARG_WEIGHTS, p.weights.get()}, {DNNL_ARG_DST, p.dst.get()}};
    const dnnl::memory::desc scratchpad = p.pd.scratchpad_desc();
    if (scratchpad.get_size()) {
      p.scratchpad = dnnl::memory(scratchpad, engine, nullptr);
      p.args.push_back({DNNL_ARG_SCRATCHPAD, p.scratchpad.get()});
    }
  }
  stream_ = dnnl::stream(engine);
}

void BlockedProduct::run(const rk_tensor_view* inputs, std::byte* workspace, void* output) {
  auto* const a = reinterpret_cast<float*>(workspace + a_at_);
  auto* const b = reinterpret_cast<float*>(workspace + b_at_);
  auto* const c = reinterpret_cast<float*>(workspace + c_at_);
  const bool half = is_half(result_dtype_);
  // The operand a split along N or M does not cut, widened whole once.
  if (split_ == Split::kColumns) widen_slice(inputs[0].data, dtype_, a_, {0, x_.batch, 0, x_.m, 0, x_.k}, a);
  if (split_ == Split::kRows) widen_slice(inputs[1].data, dtype_, b_, {0, x_.batch, 0, x_.k, 0, x_.n}, b);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& block = blocks_[i];
    if (split_ != Split::kColumns)
      widen_slice(inputs[0].data, dtype_, a_, {block.batch0, block.batch, block.m0, block.m, block.k0, block.k}, a);
    if (split_ != Split::kRows)
      widen_slice(inputs[1].data, dtype_, b_, {block.batch0, block.batch, block.k0, block.k, block.n0, block.n}, b);
    BlockPrimitive& p = primitives_[primitive_of_[i]];
    p.src.set_data_handle(a);
    p.weights.set_data_handle(b);
    p.dst.set_data_handle(half ? c : static_cast<float*>(output) + (block.batch0 * x_.m + block.m0) * x_.n + block.n0);
    if (p.scratchpad) p.scratchpad.set_data_handle(workspace + scratchpad_at_);
    execute(p.primitive, stream_, p.args);
    stream_.wait();
    // A split along K rounds once, after the last block has added its products: XLA:CPU's
    // semantics for bf16 dots (f32 accumulation, one rounding on store), as unblocked.
    if (!half || (split_ == Split::kContracted && i + 1 < blocks_.size())) continue;
    const Block whole{0, x_.batch, 0, x_.m, 0, x_.n, 0, x_.k, false};
    narrow_block(c, result_dtype_, split_ == Split::kContracted ? whole : block, x_, output);
  }
}

}  // namespace

std::optional<BlockPlan> plan_blocks(const Layout& a, const Layout& b, const Layout& c, size_t block_bytes) {
  const int64_t budget = static_cast<int64_t>(block_bytes / sizeof(float));
  const Extents x = extents_of(a, b, c);
  const int64_t matrix = x.m * x.k + x.k * x.n + x.m * x.n;  // one batch element's operands and result
  if (budget == 0 || x.batch * matrix <= budget || !contiguous_runs(a) || !contiguous_runs(b)) return std::nullopt;
  if (x.batch > 1) return BlockPlan{Split::kBatch, std::max<int64_t>(1, budget / matrix), x.batch};
  auto along = [](Split split, int64_t size, int64_t length) -> std::optional<BlockPlan> {
    size = std::max(kMinBlock, size / kBlockMultiple * kBlockMultiple);
    if (size >= length) return std::nullopt;
    return BlockPlan{split, size, length};
  };
  // Along K where it is the longest dim (an input's gradient through a vocabulary-sized
  // contraction): the slices have the budget less the f32 result, which every block adds to, or
  // half of it where the result is larger. Cutting M or N there instead would widen the other,
  // K-long operand whole.
  if (x.k >= x.m && x.k >= x.n)
    return along(Split::kContracted, (budget - std::min(x.m * x.n, budget / 2)) / (x.m + x.n), x.k);
  // Else along the longer free dim; the operand it does not cut is widened whole once, so only
  // the cut one's slice and the result count.
  if (x.n >= x.m) return along(Split::kColumns, budget / (x.k + x.m), x.n);
  return along(Split::kRows, budget / (x.k + x.n), x.m);
}

bool blocked_product_recipe(const dnnl::engine& engine, const rk_equation_view* e, const Layout& a, const Layout& b,
                            const Layout& c, size_t block_bytes, Recipe& r) {
  const std::optional<BlockPlan> plan = plan_blocks(a, b, c, block_bytes);
  if (!plan) return false;
  auto product = std::make_shared<BlockedProduct>(engine, e, a, b, c, *plan);
  const Extents x = extents_of(a, b, c);
  r.key = key_of("matmul-blocked", {&a.dims, &a.strides, &b.dims, &b.strides});
  r.inputs = {{DNNL_ARG_SRC, dnnl::memory::desc(a.dims, dt::f32, a.strides)},
              {DNNL_ARG_WEIGHTS, dnnl::memory::desc(b.dims, dt::f32, b.strides)}};
  r.output = {DNNL_ARG_DST, dnnl::memory::desc(c.dims, dt::f32, c.strides)};
  r.work = x.batch * x.m * x.n * x.k;
  r.workspace_bytes = product->workspace_bytes();
  r.make_run = [product](const dnnl::engine& eng) -> Recipe::Run {
    product->make(eng);
    return [product](const rk_tensor_view* inputs, std::byte* workspace, void* output) {
      product->run(inputs, workspace, output);
    };
  };
  return true;
}

}  // namespace rematkit_onednn
