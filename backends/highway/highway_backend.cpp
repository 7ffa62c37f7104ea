// The Highway backend plugin: f32 elementwise kernels, comparisons and two-case select_n (operands
// with size-1 dims are expanded into the workspace first), reductions, copies and rev, softmax along the
// last axis, and dot_general with any dimension numbers (operands are permuted into the GEMM's
// layout in the kernel's workspace when they are not in it already, and B's panels are packed there
// too). Every scratch byte is in the workspace the host gives, so a run allocates nothing. It
// declines everything else (and ranks above kMaxRank) when asked, so the equation goes to the next
// backend in the user's list.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <array>
#include <limits>
#include <optional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "highway/fused_elementwise.hpp"
#include "highway/kernels.hpp"
#include "highway/primitive_ops.hpp"
#include "rematkit/plugin/measured_cost.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::hwy_backend::Binary;
using rematkit::hwy_backend::Bitwise;
using rematkit::hwy_backend::Compare;
using rematkit::hwy_backend::Unary;
using rematkit::hwy_backend::kBinaries;
using rematkit::hwy_backend::kBitwises;
using rematkit::hwy_backend::kCompares;
using rematkit::hwy_backend::kUnaries;
using rematkit::Prim;
using rematkit::plugin::dot_dims;
using rematkit::plugin::guarded;
using rematkit::plugin::int_param;
using rematkit::plugin::ints_param;
using Dims = std::vector<int64_t>;

// The highest rank this backend runs (higher ones go to the next backend): execute() counts
// coordinates in arrays of this size on the stack, so a run allocates nothing.
constexpr size_t kMaxRank = 16;
using Index = std::array<int64_t, kMaxRank>;

Dims shape_of(const rk_type& t) { return Dims(t.shape, t.shape + t.rank); }

size_t count(const Dims& d) {
  size_t n = 1;
  for (int64_t x : d) n *= static_cast<size_t>(x);
  return n;
}

// A copy of an operand with its dims reordered: out[i...] = in[perm applied], row-major.
struct Permutation {
  Dims shape, perm;  // the operand's shape; output dim i is input dim perm[i]
  bool identity() const {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  }
  size_t count() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  void apply(const float* in, float* out) const {
    const size_t rank = shape.size();
    if (const std::optional<Matrices> m = as_matrices()) return transpose(*m, in, out);
    Index in_strides, out_shape;
    if (rank > 0) in_strides[rank - 1] = 1;
    for (int i = static_cast<int>(rank) - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * shape[i + 1];
    for (size_t i = 0; i < rank; ++i) out_shape[i] = shape[perm[i]];
    // When the innermost dim stays innermost (attention's [B, S, H, Dh] -> [B, H, S, Dh]), whole
    // rows are copied; otherwise one element at a time.
    const bool rows = rank > 0 && perm[rank - 1] == static_cast<int64_t>(rank - 1);
    const size_t row = rows ? static_cast<size_t>(shape[rank - 1]) : 1;
    Index coord{};
    for (size_t o = 0, n = count(); o < n; o += row) {
      int64_t offset = 0;
      for (size_t i = 0; i < rank; ++i) offset += coord[i] * in_strides[perm[i]];
      if (rows) std::copy(in + offset, in + offset + row, out + o);
      else out[o] = in[offset];
      for (int i = static_cast<int>(rank) - (rows ? 2 : 1); i >= 0 && ++coord[i] == out_shape[i]; --i) coord[i] = 0;
    }
  }

 private:
  // A batch of matrices to transpose: leading dims in place, then two groups of adjacent dims
  // swapped. A weight's transpose (the last two dims), and attention's heads moved past the
  // sequence ([B, H, Dh, S] to [B, S, H, Dh]: rows of H*Dh, columns of S).
  struct Matrices {
    size_t count, rows, cols;
  };
  std::optional<Matrices> as_matrices() const {
    const size_t rank = perm.size();
    size_t kept = 0;
    while (kept < rank && perm[kept] == static_cast<int64_t>(kept)) ++kept;
    if (rank - kept < 2) return std::nullopt;
    // The rest is dims [split, rank) then [kept, split): a rotation.
    const size_t split = static_cast<size_t>(perm[kept]);
    for (size_t i = kept; i < rank; ++i) {
      const size_t from = i - kept < rank - split ? split + (i - kept) : kept + (i - kept) - (rank - split);
      if (perm[i] != static_cast<int64_t>(from)) return std::nullopt;
    }
    Matrices m{1, 1, 1};
    for (size_t d = 0; d < kept; ++d) m.count *= static_cast<size_t>(shape[d]);
    for (size_t d = kept; d < split; ++d) m.rows *= static_cast<size_t>(shape[d]);
    for (size_t d = split; d < rank; ++d) m.cols *= static_cast<size_t>(shape[d]);
    return m;
  }
  // Tile by tile, so that both the rows read and the rows written stay in cache.
  static void transpose(const Matrices& m, const float* in, float* out) {
    constexpr size_t kTile = 32;
    const size_t rows = m.rows, cols = m.cols;
    for (size_t b = 0; b < m.count; ++b, in += rows * cols, out += rows * cols)
      for (size_t r0 = 0; r0 < rows; r0 += kTile)
        for (size_t c0 = 0; c0 < cols; c0 += kTile)
          for (size_t c = c0; c < std::min(cols, c0 + kTile); ++c)
            for (size_t r = r0; r < std::min(rows, r0 + kTile); ++r) out[c * rows + r] = in[r * cols + c];
  }
};

struct Kernel {
  enum class Kind {
    kUnary, kPow, kBinary, kCompare, kSelect, kGemm, kPermute, kBroadcast, kReduce, kReduceLeading, kSoftmax,
    kGatherRows, kScatterAddRows, kFused, kReverse, kBitwise, kSplit, kPad, kIota, kRandomBits, kRandomFoldIn,
    kCompareInt, kConvertToF32
  } kind;
  int op = 0;
  bool a_scalar = false, b_scalar = false;
  size_t n = 0;                              // elements of the output
  size_t batch = 1, m = 0, cols = 0, k = 0;  // for kGemm: [batch, m, k] x [batch, k, cols]
  Permutation lhs, rhs;                      // into those layouts; copied into the workspace unless identity
  size_t packing_at = 0, packing = 0;        // kGemm: where B's packed panels start in the workspace, and
                                             // the floats each product of the batch gets there
  Dims in_shape, out_shape, dims;            // kBroadcast: broadcast_dimensions
  bool is_max = false;                       // kReduce over `n` rows of `k` trailing elements;
                                             // kReduceLeading over `k` rows of `n / outer` elements
                                             // in each of `outer` blocks (the field below)
  int64_t power = 0;                         // kPow
  Dims a_shape, b_shape;                     // kBinary, kCompare: operands with size-1 dims to expand
  // kBinary, kCompare, kBitwise over `rows` rows of `inner` elements (rows 0: not by rows), each
  // operand read as it is, as one value per row, or as one row for all (binary_operands).
  enum class Spread : uint8_t { kFull, kScalar, kPerRow, kEachRow };
  size_t rows = 0, inner = 0;
  // Short rows grouped: each row of `inner` is `group` of the operands' rows, and an each-row
  // operand is read from its row repeated `group` times in the workspace (a bias's [1, 1, 1, C]
  // beside NHWC: one call per 1024 elements, not per C).
  size_t group = 1;
  Spread a_spread = Spread::kFull, b_spread = Spread::kFull;
  // kGatherRows, kScatterAddRows: `n` indices into a table of `m` rows of `k` floats.
  // kFused: elementwise parts over one shape, after a product when kGemm's fields are set too
  // (`after_product`). Per value of the fused equation: the input (i >= 0) or output (-2 - o) whose
  // buffer holds it, or kInside for one only the parts read. The product's result, when only the
  // parts read it, is written to the workspace at `product_at` floats.
  std::shared_ptr<const rematkit::hwy_backend::FusedElementwise> parts;
  bool after_product = false;
  std::vector<int> buffer_of;
  size_t product_at = 0, product_value = 0;
  int product_into = -1;  // the result value whose buffer the product is written into first, or -1
  std::array<size_t, 2> product_operands{};  // the product's operands' value numbers (x @ x reads one twice)
  static constexpr int kInside = -1;
  bool unsigned_indices = false;             // u32 indices, else i32
  bool drop_out_of_bounds = false;           // FILL_OR_DROP; otherwise clamped into the table (XLA)
  float fill = 0;                            // the row an out-of-bounds gather gives
  // kSplit, kPad: `outer` runs of `in_run` floats in the operand and `out_run` in the output, the
  // operand's run at float `at` of the output's (kPad) or the output's at `at` of the operand's
  // (kSplit). kIota: `out_run` = the elements one step of `dimension` spans, `at` = its size.
  size_t outer = 0, in_run = 0, out_run = 0, at = 0;
  size_t element_bytes = 4;                  // kBroadcast: 4, or 1 for bool
};

// An embedding's rows (x[ids], jnp.take, nn.Embed) and their transpose, the scatter-add of rows:
// the table [rows, width], indices [..., 1] of i32 or u32, windows of one whole row.
bool row_indexing(const rk_equation_view* e, bool scatter, Kernel& k) {
  const rk_type& table = e->inputs[0];
  const rk_type& indices = e->inputs[1];
  if (table.dtype != RK_DTYPE_F32 || table.rank != 2 || table.shape[0] < 1 || table.shape[1] < 1) return false;
  if ((indices.dtype != RK_DTYPE_I32 && indices.dtype != RK_DTYPE_U32) || indices.rank < 1 ||
      indices.shape[indices.rank - 1] != 1)
    return false;
  const bool wraps = rematkit::plugin::find_param(e, "wrap_negative_indices") &&
                     rematkit::plugin::bool_param(e, "wrap_negative_indices");
  if (e->outputs[0].dtype != RK_DTYPE_F32 || wraps) return false;
  const rematkit::IndexingDims d = rematkit::plugin::indexing_dims(e);
  const int64_t window = indices.rank - 1;  // the row's dim in the output (the updates)
  if (d.window_dims != std::vector<int64_t>{window} || d.collapsed_dims != std::vector<int64_t>{0} ||
      d.index_map != std::vector<int64_t>{0} || !d.operand_batching_dims.empty())
    return false;
  if (!scatter && rematkit::plugin::ints_param(e, "slice_sizes") != std::vector<int64_t>{1, table.shape[1]}) return false;
  if (scatter && (e->inputs[2].dtype != RK_DTYPE_F32 || e->inputs[2].rank != indices.rank ||
                  e->inputs[2].shape[window] != table.shape[1]))
    return false;
  k.kind = scatter ? Kernel::Kind::kScatterAddRows : Kernel::Kind::kGatherRows;
  k.m = static_cast<size_t>(table.shape[0]);
  k.k = static_cast<size_t>(table.shape[1]);
  k.n = count(Dims(indices.shape, indices.shape + indices.rank));
  k.unsigned_indices = indices.dtype == RK_DTYPE_U32;
  k.drop_out_of_bounds = rematkit::plugin::index_mode(e) == rematkit::IndexMode::kFillOrDrop;
  const std::optional<double> fill = scatter ? std::nullopt : rematkit::plugin::fill_value(e);
  k.fill = fill ? static_cast<float>(*fill) : std::numeric_limits<float>::quiet_NaN();
  return true;
}

// Row `r`'s index, clamped into the table, or -1 when it is out of bounds and dropped.
int64_t row_of(const Kernel& k, const void* indices, size_t r) {
  const int64_t i = k.unsigned_indices ? static_cast<int64_t>(static_cast<const uint32_t*>(indices)[r])
                                       : static_cast<int64_t>(static_cast<const int32_t*>(indices)[r]);
  const int64_t last = static_cast<int64_t>(k.m) - 1;
  if (i >= 0 && i <= last) return i;
  return k.drop_out_of_bounds ? -1 : std::clamp<int64_t>(i, 0, last);
}

// n copies of the 4-byte (or bool) value v.
template <typename T>
void fill(T v, T* out, size_t n) {
  if constexpr (sizeof(T) == 4) rematkit::hwy_backend::fill32(std::bit_cast<uint32_t>(v), reinterpret_cast<uint32_t*>(out), n);
  else std::fill(out, out + n, v);
}

// broadcast_in_dim of `in` (shape in_shape, placed at output dims `dims`) to out_shape. Blocks are
// copied whole: the output's trailing dims that are the operand's trailing dims in order, at full
// size (a causal mask's [S, S] under [B, H, S, S]: one block per (b, h)); otherwise one element at
// a time.
template <typename T>
void broadcast(const Dims& in_shape, std::span<const int64_t> dims, const Dims& out_shape, const T* in, T* out) {
  const size_t n_in = count(in_shape), n_out = count(out_shape);
  if (n_in == 1) return fill(in[0], out, n_out);  // zeros, a seed of ones
  bool in_order = true;  // then equal counts mean only size-1 dims were added: the same elements
  for (size_t i = 1; i < dims.size(); ++i) in_order = in_order && dims[i] > dims[i - 1];
  if (in_order && n_in == n_out) return void(std::memcpy(out, in, n_out * sizeof(T)));
  // The operand's dims lead the output unchanged and new dims trail (a softmax sum spread over its
  // row): each element fills a run.
  bool leading = dims.size() < out_shape.size();
  for (size_t i = 0; i < dims.size() && leading; ++i)
    leading = dims[i] == static_cast<int64_t>(i) && in_shape[i] == out_shape[i];
  if (leading) {
    const size_t run = n_out / std::max<size_t>(n_in, 1);
    for (size_t i = 0; i < n_in; ++i) fill(in[i], out + i * run, run);
    return;
  }
  const size_t rank = out_shape.size();
  Index in_strides;
  if (!in_shape.empty()) in_strides[in_shape.size() - 1] = 1;
  for (int i = static_cast<int>(in_shape.size()) - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * in_shape[i + 1];
  // The trailing output dims copied as one block: operand dims from the last back, each mapped to
  // the output dim before the last one taken, at full size.
  size_t block_dims = 0;
  int64_t block = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != static_cast<int64_t>(rank - 1 - block_dims) || in_shape[i] != out_shape[static_cast<size_t>(dims[i])]) break;
    block *= in_shape[i];
    ++block_dims;
  }
  Index coord{};
  for (size_t o = 0; o < n_out; o += static_cast<size_t>(block)) {
    int64_t offset = 0;
    for (size_t i = 0; i < dims.size(); ++i)
      if (in_shape[i] != 1) offset += coord[dims[i]] * in_strides[i];
    if (block > 1) std::memcpy(out + o, in + offset, static_cast<size_t>(block) * sizeof(T));
    else out[o] = in[offset];
    for (int i = static_cast<int>(rank - block_dims) - 1; i >= 0 && ++coord[i] == out_shape[i]; --i) coord[i] = 0;
  }
}

// rev: out[i...] = in[i with each of `dims` counted from its end], whole rows at a time when the
// last dim keeps its order (a convolution kernel reversed in space, [H, W, I, O]).
void reverse(const Dims& shape, const Dims& dims, const float* in, float* out) {
  const size_t rank = shape.size();
  if (rank == 0) return void(out[0] = in[0]);
  std::array<bool, kMaxRank> reversed{};
  for (int64_t d : dims) reversed[static_cast<size_t>(d)] = true;
  Index strides;
  strides[rank - 1] = 1;
  for (int i = static_cast<int>(rank) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  const bool rows = !reversed[rank - 1];
  const size_t row = rows ? static_cast<size_t>(shape[rank - 1]) : 1;
  Index coord{};
  for (size_t o = 0, n = count(shape); o < n; o += row) {
    int64_t offset = 0;
    for (size_t i = 0; i < rank; ++i) offset += (reversed[i] ? shape[i] - 1 - coord[i] : coord[i]) * strides[i];
    if (rows) std::copy(in + offset, in + offset + row, out + o);
    else out[o] = in[offset];
    for (int i = static_cast<int>(rank) - (rows ? 2 : 1); i >= 0 && ++coord[i] == shape[i]; --i) coord[i] = 0;
  }
}

// An operand with size-1 dims expanded to the output's shape in `scratch` (then advanced), or as is.
const float* expanded(const Dims& shape, const Dims& out_shape, const float* data, float*& scratch) {
  if (shape.empty()) return data;
  Index dims;
  std::iota(dims.begin(), dims.begin() + static_cast<long>(shape.size()), 0);
  broadcast(shape, std::span<const int64_t>(dims.data(), shape.size()), out_shape, data, scratch);
  const float* result = scratch;
  scratch += count(out_shape);
  return result;
}


bool all_f32(const rk_equation_view* e) {
  for (size_t i = 0; i < e->num_inputs; ++i)
    if (e->inputs[i].dtype != RK_DTYPE_F32) return false;
  for (size_t i = 0; i < e->num_outputs; ++i)
    if (e->outputs[i].dtype != RK_DTYPE_F32) return false;
  return true;
}

// The most elements short rows are grouped into (Kernel::group): a Highway loop call's worth.
constexpr size_t kGroupedRow = 1024;

// Two operands of a binary op: direct (same shape as the output, or rank 0), or of the output's
// rank with size-1 dims, which execute() expands into the workspace first.
bool binary_operands(const Dims& a, const Dims& b, const Dims& out, Kernel& k) {
  auto fits = [&](const Dims& s) {
    if (s.empty() || s == out) return true;
    if (s.size() != out.size()) return false;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != out[i] && s[i] != 1) return false;
    return true;
  };
  if (!fits(a) || !fits(b)) return false;
  k.a_scalar = a.empty() && !out.empty();
  k.b_scalar = b.empty() && !out.empty();
  if (!a.empty() && a != out) k.a_shape = a;
  if (!b.empty() && b != out) k.b_shape = b;
  if (k.a_shape.empty() && k.b_shape.empty()) return true;
  // Size-1 dims that leave whole rows: a layer norm's [B, S, 1] beside [B, S, D] is one value per
  // row, a bias's [1, 1, D] one row for all. Then each row is one call with a scalar or a pointer,
  // and nothing is expanded; rows shorter than a few vectors are expanded as before.
  using Spread = Kernel::Spread;
  for (size_t j = 0; j <= out.size(); ++j) {
    auto spread = [&](const Dims& s, Spread& how) {
      if (s.empty()) return how = Spread::kFull, true;  // as the output, or a rank-0 scalar
      bool per_row = true, each_row = true;
      for (size_t i = 0; i < s.size(); ++i) {
        per_row = per_row && (i < j ? s[i] == out[i] : s[i] == 1);
        each_row = each_row && (i < j ? s[i] == 1 : s[i] == out[i]);
      }
      if (per_row) how = Spread::kPerRow;
      else if (each_row) how = Spread::kEachRow;
      return per_row || each_row;
    };
    if (!spread(k.a_shape, k.a_spread) || !spread(k.b_shape, k.b_spread)) continue;
    const size_t inner = count(Dims(out.begin() + static_cast<long>(j), out.end()));
    if (inner >= 32) k.rows = count(out) / inner, k.inner = inner;
    if (k.a_spread != Spread::kPerRow && k.b_spread != Spread::kPerRow && inner > 0) {
      const size_t rows = count(out) / inner;
      while (k.group * 2 * inner <= kGroupedRow && rows % (k.group * 2) == 0) k.group *= 2;
      if (k.group > 1) k.rows = rows / k.group, k.inner = inner * k.group;
    }
    break;
  }
  return true;
}

// y[i] = a[i or 0] op b[i or 0] on integers, as 0 / 1 bytes (plain loops the compiler vectorizes).
template <class T>
void compare_ints(Compare op, const T* a, bool a_scalar, const T* b, bool b_scalar, uint8_t* y, size_t n) {
  auto run = [&](auto cmp) {
    for (size_t i = 0; i < n; ++i) y[i] = cmp(a[a_scalar ? 0 : i], b[b_scalar ? 0 : i]) ? 1 : 0;
  };
  switch (op) {
    case Compare::kGt: return run([](T x, T z) { return x > z; });
    case Compare::kGe: return run([](T x, T z) { return x >= z; });
    case Compare::kLt: return run([](T x, T z) { return x < z; });
    case Compare::kLe: return run([](T x, T z) { return x <= z; });
    case Compare::kEq: return run([](T x, T z) { return x == z; });
    case Compare::kNe: return run([](T x, T z) { return x != z; });
  }
}

// A binary, comparison or bitwise kernel row by row (Kernel::rows): operands of 4-byte elements,
// results of `out_bytes`.
template <class Run>
void by_rows(const Kernel& k, const void* a, const void* b, void* y, size_t out_bytes, void* workspace, Run run) {
  using Spread = Kernel::Spread;
  if (k.group > 1) {  // each-row operands repeated over a group of rows (Kernel::group)
    uint32_t* tile = static_cast<uint32_t*>(workspace);
    const size_t row = k.inner / k.group;
    for (const void** operand : {&a, &b}) {
      const Spread spread = operand == &a ? k.a_spread : k.b_spread;
      const bool scalar = operand == &a ? k.a_scalar : k.b_scalar;
      if (spread != Spread::kEachRow || scalar) continue;
      const uint32_t* from = static_cast<const uint32_t*>(*operand);
      for (size_t g = 0; g < k.group; ++g) std::copy(from, from + row, tile + g * row);
      *operand = tile;
      tile += k.inner;
    }
  }
  auto row_of = [&](const void* data, Spread spread, bool scalar, size_t r, bool& row_scalar) {
    const std::byte* base = static_cast<const std::byte*>(data);
    row_scalar = scalar || spread == Spread::kPerRow;
    if (scalar || spread == Spread::kEachRow) return static_cast<const void*>(base);
    return static_cast<const void*>(base + 4 * (spread == Spread::kPerRow ? r : r * k.inner));
  };
  for (size_t r = 0; r < k.rows; ++r) {
    bool a_scalar = false, b_scalar = false;
    const void* ar = row_of(a, k.a_spread, k.a_scalar, r, a_scalar);
    const void* br = row_of(b, k.b_spread, k.b_scalar, r, b_scalar);
    run(ar, a_scalar, br, b_scalar, static_cast<std::byte*>(y) + out_bytes * r * k.inner, k.inner);
  }
}

bool choose_kernel(const rk_equation_view* e, Kernel& k);

// A fused equation: elementwise parts over one shape, or a product whose output its elementwise
// parts read, run as the GEMM's epilogue on each block it finishes.
bool fused_kernel(const rematkit::plugin::Fusion& fusion, Kernel& k) {
  const bool after_product = fusion.parts().front().prim == Prim::kDotGeneral;
  if (after_product) {
    const auto product = fusion.part_equation(0);
    if (!choose_kernel(product.get(), k) || k.kind != Kernel::Kind::kGemm) return false;
  }
  auto parts = rematkit::hwy_backend::FusedElementwise::of(fusion, after_product ? 1 : 0);
  if (!parts) return false;
  k.kind = Kernel::Kind::kFused;
  k.after_product = after_product;
  k.product_value = fusion.num_inputs();
  if (after_product)
    for (size_t i = 0; i < 2; ++i) k.product_operands[i] = static_cast<size_t>(fusion.parts().front().operands.at(i));
  k.parts = std::make_shared<const rematkit::hwy_backend::FusedElementwise>(std::move(*parts));
  k.n = k.parts->elements();
  k.buffer_of.assign(fusion.num_values(), Kernel::kInside);
  for (size_t i = 0; i < fusion.num_inputs(); ++i) k.buffer_of[i] = static_cast<int>(i);
  for (size_t o = 0; o < fusion.results().size(); ++o) k.buffer_of[static_cast<size_t>(fusion.results()[o])] = -2 - static_cast<int>(o);
  // A product only the parts read is written into a result of its shape that no part writes before
  // the last part that reads the product: each segment reads the product there before the result
  // overwrites it, and no workspace holds a second copy.
  if (after_product && k.buffer_of[k.product_value] == Kernel::kInside) {
    size_t last_reader = 0;
    for (size_t j = 1; j < fusion.parts().size(); ++j)
      for (int64_t v : fusion.parts()[j].operands)
        if (v == static_cast<int64_t>(k.product_value)) last_reader = j;
    for (size_t j = last_reader; j < fusion.parts().size() && k.product_into < 0; ++j) {
      const size_t v = fusion.num_inputs() + j;
      if (fusion.is_result(static_cast<int64_t>(v)) && fusion.dtype(static_cast<int64_t>(v)) == RK_DTYPE_F32 &&
          fusion.shape(static_cast<int64_t>(v)) == fusion.parts().front().shape)
        k.product_into = static_cast<int>(v);
    }
  }
  return true;
}

// The kernel for `e`, or false when this backend does not run it.
bool choose_kernel(const rk_equation_view* e, Kernel& k) {
  if (auto fusion = rematkit::plugin::Fusion::of(e)) return fused_kernel(*fusion, k);
  const std::optional<Prim> prim = rematkit::plugin::primitive_of(e);
  if (e->num_outputs != 1 || !prim) return false;
  for (size_t i = 0; i < e->num_inputs; ++i)
    if (static_cast<size_t>(e->inputs[i].rank) > kMaxRank) return false;
  if (static_cast<size_t>(e->outputs[0].rank) > kMaxRank) return false;
  const Prim p = *prim;
  if (p == Prim::kGather || p == Prim::kScatterAdd) return row_indexing(e, p == Prim::kScatterAdd, k);
  const Dims out = shape_of(e->outputs[0]);
  k.n = count(out);
  k.out_shape = out;
  for (const auto& [name, op] : kCompares) {
    if (p != name) continue;
    const int32_t t = e->inputs[0].dtype;
    if ((t == RK_DTYPE_I32 || t == RK_DTYPE_U32) && e->inputs[1].dtype == t) {
      // Integers (a causal mask's iotas, a one-hot's labels): operands as the output, or scalars.
      const Dims a = shape_of(e->inputs[0]), b = shape_of(e->inputs[1]);
      if ((a != out && count(a) != 1) || (b != out && count(b) != 1)) return false;
      k.kind = Kernel::Kind::kCompareInt;
      k.op = static_cast<int>(op);
      k.a_scalar = a != out, k.b_scalar = b != out;
      k.element_bytes = t == RK_DTYPE_U32 ? 0 : 4;  // 0: unsigned
      return true;
    }
    if (e->inputs[0].dtype != RK_DTYPE_F32 || e->inputs[1].dtype != RK_DTYPE_F32) return false;
    k.kind = Kernel::Kind::kCompare;
    k.op = static_cast<int>(op);
    return binary_operands(shape_of(e->inputs[0]), shape_of(e->inputs[1]), out, k);
  }
  if (p == Prim::kSelectN) {
    if (e->num_inputs != 3 || e->inputs[0].dtype != RK_DTYPE_BOOL || e->inputs[1].dtype != RK_DTYPE_F32) return false;
    k.kind = Kernel::Kind::kSelect;
    k.a_scalar = e->inputs[0].rank == 0 && !out.empty();
    return true;
  }
  if (auto op = op_of(kBitwises, p); op && e->num_inputs == 2) {  // on 32-bit integers of one dtype
    const int32_t dtype = e->outputs[0].dtype;
    const bool lanes = dtype == RK_DTYPE_I32 || (dtype == RK_DTYPE_U32 && *op != Bitwise::kShiftRightArithmetic);
    if (!lanes || e->inputs[0].dtype != dtype || e->inputs[1].dtype != dtype) return false;
    k.kind = Kernel::Kind::kBitwise;
    k.op = static_cast<int>(*op);
    return binary_operands(shape_of(e->inputs[0]), shape_of(e->inputs[1]), out, k);
  }
  if (p == Prim::kBitcastConvertType && e->num_inputs == 1) {  // between f32, i32 and u32: the bits as they are
    auto word = [](int32_t t) { return t == RK_DTYPE_F32 || t == RK_DTYPE_I32 || t == RK_DTYPE_U32; };
    if (!word(e->inputs[0].dtype) || !word(e->outputs[0].dtype) || shape_of(e->inputs[0]) != out) return false;
    k.kind = Kernel::Kind::kUnary;
    k.op = static_cast<int>(Unary::kCopy);
    return true;
  }
  // Layout ops move elements as they are: broadcast_in_dim of any 4-byte dtype or bool, iota of i32.
  if (p == Prim::kBroadcastInDim && e->inputs[0].dtype == e->outputs[0].dtype) {
    const int32_t t = e->outputs[0].dtype;
    if (t != RK_DTYPE_F32 && t != RK_DTYPE_I32 && t != RK_DTYPE_U32 && t != RK_DTYPE_BOOL) return false;
    k.kind = Kernel::Kind::kBroadcast;
    k.element_bytes = t == RK_DTYPE_BOOL ? 1 : 4;
    k.in_shape = shape_of(e->inputs[0]);
    k.dims = ints_param(e, "broadcast_dimensions");
    return true;
  }
  if (p == Prim::kIota && e->outputs[0].dtype == RK_DTYPE_I32 && e->num_inputs == 0) {
    const int64_t dim = int_param(e, "dimension");
    if (dim < 0 || dim >= static_cast<int64_t>(out.size()) || out[static_cast<size_t>(dim)] > (int64_t{1} << 31) - 1) return false;
    k.kind = Kernel::Kind::kIota;
    k.out_run = count(Dims(out.begin() + dim + 1, out.end()));
    k.at = static_cast<size_t>(out[static_cast<size_t>(dim)]);
    return true;
  }
  if (p == Prim::kRandomBits && e->num_inputs == 1 && e->inputs[0].dtype == RK_DTYPE_KEY_FRY) {
    const int64_t width = int_param(e, "bit_width");
    if (!((width == 32 && e->outputs[0].dtype == RK_DTYPE_U32) || (width == 8 && e->outputs[0].dtype == RK_DTYPE_U8))) return false;
    k.kind = Kernel::Kind::kRandomBits;
    k.outer = count(shape_of(e->inputs[0]));  // keys
    k.out_run = k.outer ? k.n / k.outer : 0;  // words per key
    k.element_bytes = width == 8 ? 1 : 4;
    return true;
  }
  if (p == Prim::kRandomFoldIn && e->num_inputs == 2 && e->inputs[0].dtype == RK_DTYPE_KEY_FRY &&
      e->inputs[1].dtype == RK_DTYPE_U32 && shape_of(e->inputs[0]) == out) {
    const Dims data = shape_of(e->inputs[1]);
    if (data != out && count(data) != 1) return false;
    k.kind = Kernel::Kind::kRandomFoldIn;
    k.a_scalar = data != out;
    return true;
  }
  if (p == Prim::kConvertElementType && e->num_inputs == 1 && e->outputs[0].dtype == RK_DTYPE_F32 &&
      (e->inputs[0].dtype == RK_DTYPE_BOOL || e->inputs[0].dtype == RK_DTYPE_I32)) {
    k.kind = Kernel::Kind::kConvertToF32;  // a mask or a one-hot into floats: 0/1, or the nearest float
    k.element_bytes = e->inputs[0].dtype == RK_DTYPE_BOOL ? 1 : 4;
    return true;
  }
  if (!all_f32(e)) return false;
  if (p == Prim::kSplit && e->num_inputs == 1) {  // output `output` of the pieces along `axis`: a slab
    const Dims in = shape_of(e->inputs[0]), sizes = ints_param(e, "sizes");
    const int64_t axis = int_param(e, "axis"), piece = int_param(e, "output");
    if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || piece < 0 || piece >= static_cast<int64_t>(sizes.size())) return false;
    const size_t inner = count(Dims(in.begin() + axis + 1, in.end()));
    k.kind = Kernel::Kind::kSplit;
    k.outer = count(Dims(in.begin(), in.begin() + axis));
    k.in_run = static_cast<size_t>(in[static_cast<size_t>(axis)]) * inner;
    k.out_run = static_cast<size_t>(sizes[static_cast<size_t>(piece)]) * inner;
    k.at = static_cast<size_t>(std::accumulate(sizes.begin(), sizes.begin() + piece, int64_t{0})) * inner;
    return k.at + k.out_run <= k.in_run;
  }
  if (p == Prim::kPad && e->num_inputs == 2 && e->inputs[1].rank == 0) {
    // Edges of zero or more along one axis, no interior padding (split's transpose); others decline.
    const Dims in = shape_of(e->inputs[0]);
    const std::vector<rematkit::PaddingDim> config = rematkit::plugin::padding_config(e);
    if (config.size() != in.size()) return false;
    int64_t axis = -1;
    for (size_t d = 0; d < in.size(); ++d) {
      const int64_t lo = config[d].low, hi = config[d].high, interior = config[d].interior;
      if (lo < 0 || hi < 0 || interior != 0) return false;
      if (lo == 0 && hi == 0) continue;
      if (axis >= 0) return false;
      axis = static_cast<int64_t>(d);
    }
    if (axis < 0) axis = 0;  // nothing padded: a copy
    const size_t inner = count(Dims(in.begin() + axis + 1, in.end()));
    k.kind = Kernel::Kind::kPad;
    k.outer = count(Dims(in.begin(), in.begin() + axis));
    k.in_run = in.empty() ? 1 : static_cast<size_t>(in[static_cast<size_t>(axis)]) * inner;
    k.out_run = out.empty() ? 1 : static_cast<size_t>(out[static_cast<size_t>(axis)]) * inner;
    k.at = in.empty() ? 0 : static_cast<size_t>(config[static_cast<size_t>(axis)].low) * inner;
    return true;
  }
  if (p == Prim::kIntegerPow) {
    k.kind = Kernel::Kind::kPow;
    k.power = int_param(e, "y");
    return true;
  }
  if (p == Prim::kConvertElementType) {  // f32 to f32: a copy
    k.kind = Kernel::Kind::kUnary;
    k.op = static_cast<int>(Unary::kCopy);
    return true;
  }
  for (const auto& [name, op] : kUnaries) {
    if (p != name) continue;
    k.kind = Kernel::Kind::kUnary;
    k.op = static_cast<int>(op);
    return true;
  }
  for (const auto& [name, op] : kBinaries) {
    if (p != name) continue;
    k.kind = Kernel::Kind::kBinary;
    k.op = static_cast<int>(op);
    return binary_operands(shape_of(e->inputs[0]), shape_of(e->inputs[1]), out, k);
  }
  if (p == Prim::kSoftmax) {  // along the last axis (attention's); other axes go to the next backend
    const int64_t rank = static_cast<int64_t>(out.size());
    const int64_t axis = int_param(e, "axis");
    if (rank == 0 || e->inputs[0].dtype != RK_DTYPE_F32 || (axis != rank - 1 && axis != -1)) return false;
    k.kind = Kernel::Kind::kSoftmax;
    k.k = static_cast<size_t>(out.back());
    return true;
  }
  if (p == Prim::kTranspose) {
    k.kind = Kernel::Kind::kPermute;
    k.lhs = {shape_of(e->inputs[0]), ints_param(e, "permutation")};
    return true;
  }
  if (p == Prim::kRev) {
    k.kind = Kernel::Kind::kReverse;
    k.dims = ints_param(e, "dimensions");
    for (int64_t d : k.dims)
      if (d < 0 || d >= static_cast<int64_t>(out.size())) return false;
    return true;
  }
  if (p == Prim::kReduceSum || p == Prim::kReduceMax) {
    // Kept axes first, reduced axes last (a copy in the workspace unless already so): each output
    // element then reduces one contiguous row.
    const Dims axes = ints_param(e, "axes");
    const Dims in_shape = shape_of(e->inputs[0]);
    k.kind = Kernel::Kind::kReduce;
    k.is_max = p == Prim::kReduceMax;
    k.lhs = {in_shape, {}};
    for (int64_t d = 0; d < static_cast<int64_t>(in_shape.size()); ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) k.lhs.perm.push_back(d);
    Dims sorted = axes;
    std::sort(sorted.begin(), sorted.end());
    k.lhs.perm.insert(k.lhs.perm.end(), sorted.begin(), sorted.end());
    k.k = 1;
    for (int64_t a : axes) k.k *= static_cast<size_t>(in_shape[a]);
    // Adjacent axes reduced with kept axes after them (a bias's gradient sums over the batch, a
    // global average pool over H and W of NHWC): rows added to rows within each block of the axes
    // before them, no copy.
    bool adjacent = !sorted.empty() && sorted.back() + 1 < static_cast<int64_t>(in_shape.size());
    for (size_t i = 1; i < sorted.size(); ++i) adjacent = adjacent && sorted[i] == sorted[i - 1] + 1;
    if (adjacent) {
      k.kind = Kernel::Kind::kReduceLeading;
      k.outer = 1;
      for (int64_t d = 0; d < sorted.front(); ++d) k.outer *= static_cast<size_t>(in_shape[d]);
    }
    return true;
  }
  if (p == Prim::kDotGeneral) {
    const rematkit::DotDims dims = dot_dims(e);
    const Dims &lc = dims.lhs_contract, &rc = dims.rhs_contract, &lb = dims.lhs_batch, &rb = dims.rhs_batch;
    const Dims a = shape_of(e->inputs[0]), b = shape_of(e->inputs[1]);
    auto in = [](const Dims& list, int64_t d) { return std::find(list.begin(), list.end(), d) != list.end(); };
    // lhs as [batch, free, contract] and rhs as [batch, contract, free]: a batched row-major GEMM
    // whose output is dot_general's (batch, lhs free, rhs free).
    k.lhs = {a, lb};
    k.rhs = {b, rb};
    size_t m = 1, cols = 1, depth = 1, batch = 1;
    for (int64_t d : lb) batch *= static_cast<size_t>(a[d]);
    for (int64_t d = 0; d < static_cast<int64_t>(a.size()); ++d)
      if (!in(lc, d) && !in(lb, d)) k.lhs.perm.push_back(d), m *= static_cast<size_t>(a[d]);
    for (int64_t d : lc) k.lhs.perm.push_back(d), depth *= static_cast<size_t>(a[d]);
    for (int64_t d : rc) k.rhs.perm.push_back(d);
    for (int64_t d = 0; d < static_cast<int64_t>(b.size()); ++d)
      if (!in(rc, d) && !in(rb, d)) k.rhs.perm.push_back(d), cols *= static_cast<size_t>(b[d]);
    k.kind = Kernel::Kind::kGemm;
    k.batch = batch;
    k.m = m;
    k.k = depth;
    k.cols = cols;
    return true;
  }
  return false;
}

// A (batched) product into c, its operands permuted into the workspace first where they must be;
// `epilogue`, when given, runs on each block of c as soon as it is done (rows count through the batch).
void run_product(const Kernel& k, const float* lhs, const float* rhs, float* c, float* workspace,
                 const rematkit::hwy_backend::Epilogue* epilogue) {
  float* scratch = workspace;
  if (!k.lhs.identity()) {
    k.lhs.apply(lhs, scratch);
    lhs = scratch;
    scratch += k.lhs.count();
  }
  if (!k.rhs.identity()) {
    k.rhs.apply(rhs, scratch);
    rhs = scratch;
  }
  float* packing = workspace + k.packing_at;
  auto product = [&](size_t b) {
    // Rows of product b count from b * m in the epilogue's numbering.
    const auto shifted_rows = [&, b](size_t r0, size_t r1, size_t c0, size_t c1) {
      (*epilogue)(b * k.m + r0, b * k.m + r1, c0, c1);
    };
    const rematkit::hwy_backend::Epilogue shifted(shifted_rows);
    rematkit::hwy_backend::gemm(lhs + b * k.m * k.k, rhs + b * k.k * k.cols, c + b * k.m * k.cols, k.m, k.cols, k.k,
                                k.packing ? packing + b * k.packing : nullptr, epilogue ? &shifted : nullptr);
  };
  // A batch of small products (attention's per head, 32x32x16) is done before oneTBB would have
  // handed its tasks out: below 2^20 multiply-adds in all, one after another.
  if (k.batch == 1 || k.batch * k.m * k.k * k.cols < (size_t{1} << 20)) {
    for (size_t b = 0; b < k.batch; ++b) product(b);
    return;
  }
  tbb::parallel_for(size_t{0}, k.batch, product);
}

// Elementwise parts over their whole shape: chunks in parallel on oneTBB once there are enough,
// each of whole rows where parts reduce rows.
void run_in_chunks(const rematkit::hwy_backend::FusedElementwise& parts, std::span<void* const> values) {
  constexpr size_t kParallelFrom = size_t{1} << 17;
  const size_t n = parts.elements(), row = parts.alignment();
  const size_t chunk = std::max<size_t>(1, (size_t{1} << 14) / row) * row;
  if (n < kParallelFrom) return parts.run(values, 0, n);
  tbb::parallel_for(size_t{0}, (n + chunk - 1) / chunk,
                    [&](size_t c) { parts.run(values, c * chunk, std::min(n, (c + 1) * chunk)); });
}

rk_error* create(const rk_value*, size_t, rk_backend** out) {
  static int instance;
  *out = reinterpret_cast<rk_backend*>(&instance);  // stateless
  return nullptr;
}
void destroy(rk_backend*) {}
int32_t supports(const rk_backend*, const rk_equation_view* e) {
  try {  // supports() never fails: an equation it cannot read is one it does not run
    Kernel k;
    if (rematkit::plugin::has_complex_operand(e)) return 0;  // real arithmetic only
    return choose_kernel(e, k) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}
// One call's time on one thread, from rematkit_kernels_bench's elementwise/highway rows (AMD EPYC,
// AVX-512, 2026-12-05): elementwise kernels only, where a per-call cost elsewhere can outweigh the
// loop. Exact arithmetic runs at the add's speed, tanh and exp at their own, the other transcendental
// functions at the speed Highway's own tanh had; an operand with size-1 dims at sub_per_row's when
// it leaves whole rows (else none).
double expected_ns(const rk_backend*, const rk_equation_view* e) {
  try {
    Kernel k;
    if (!choose_kernel(e, k)) return -1;
    const double n = static_cast<double>(k.n);
    auto pass = [&] { return rematkit::plugin::measured_ns({{256, 106}, {2048, 175}, {16384, 1450}, {131072, 18200}}, n); };
    using Kind = Kernel::Kind;
    if (k.kind == Kind::kBinary || k.kind == Kind::kCompare) {
      if (k.a_shape.empty() && k.b_shape.empty()) return pass();
      if (!k.rows) return -1;  // expanded first: slow, no estimate
      // elementwise/highway/add_each_row: [rows, C] and [1, C], short rows grouped.
      if (k.group > 1) return rematkit::plugin::measured_ns({{4096, 476}, {32768, 2080}, {98304, 6460}, {393216, 37900}}, n);
      // elementwise/highway/sub_per_row: [rows, inner] and [rows, 1], a loop call per row.
      return rematkit::plugin::measured_ns({{4096, 446}, {32768, 2040}, {98304, 5310}, {393216, 35800}}, n);
    }
    if (k.kind == Kind::kSelect || k.kind == Kind::kPow) return pass();
    if (k.kind != Kind::kUnary) return -1;
    static constexpr Unary kExact[] = {Unary::kNeg, Unary::kSqrt, Unary::kSquare, Unary::kRelu, Unary::kCopy};
    if (std::find(std::begin(kExact), std::end(kExact), static_cast<Unary>(k.op)) != std::end(kExact)) return pass();
    if (k.op == static_cast<int>(Unary::kTanh))  // XLA's rational tanh
      return rematkit::plugin::measured_ns({{256, 79}, {2048, 363}, {16384, 2690}, {131072, 20000}}, n);
    if (k.op == static_cast<int>(Unary::kExp))
      return rematkit::plugin::measured_ns({{256, 97}, {2048, 548}, {16384, 3670}, {131072, 29700}}, n);
    // The rest as Highway's own tanh measured (expm1 and its branches): log, sin and cos are of its kind.
    return rematkit::plugin::measured_ns({{256, 190}, {2048, 937}, {16384, 7060}, {131072, 55600}}, n);
  } catch (...) {
    return -1;
  }
}
rk_error* prepare(rk_backend*, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    Kernel k;
    if (!choose_kernel(e, k)) throw std::runtime_error(std::string("highway does not run ") + e->primitive + " in this form");
    if (k.kind == Kernel::Kind::kGemm || (k.kind == Kernel::Kind::kFused && k.after_product)) {
      // The permuted operands, then each product's packing buffer (the products of a batch run in
      // parallel), each starting on a cache line.
      auto cache_lines = [](size_t floats) { return (floats + 15) / 16 * 16; };
      const size_t permuted = (k.lhs.identity() ? 0 : k.lhs.count()) + (k.rhs.identity() ? 0 : k.rhs.count());
      k.packing = cache_lines(rematkit::hwy_backend::gemm_packing_floats(k.cols, k.k));
      k.packing_at = k.packing ? cache_lines(permuted) : permuted;
      *workspace_bytes = sizeof(float) * (k.packing_at + k.batch * k.packing);
      // A fused product's result that only its parts read lives in the workspace.
      if (k.kind == Kernel::Kind::kFused && k.buffer_of[k.product_value] == Kernel::kInside && k.product_into < 0) {
        k.product_at = cache_lines(k.packing_at + k.batch * k.packing);
        *workspace_bytes = sizeof(float) * (k.product_at + k.batch * k.m * k.cols);
      }
    } else if (k.kind == Kernel::Kind::kFused) {
      *workspace_bytes = 0;  // the parts' segments are on the stack
    } else if (k.kind == Kernel::Kind::kReduce)  // kReduceLeading needs none
      *workspace_bytes = k.lhs.identity() ? 0 : sizeof(float) * k.lhs.count();
    else if (k.rows)  // run row by row: nothing to expand, the each-row operands repeated over a group
      *workspace_bytes = k.group == 1 ? 0
                                      : 4 * k.inner * ((k.a_spread == Kernel::Spread::kEachRow && !k.a_scalar ? 1 : 0) +
                                                       (k.b_spread == Kernel::Spread::kEachRow && !k.b_scalar ? 1 : 0));
    else  // binary and compare operands with size-1 dims are expanded there
      *workspace_bytes = sizeof(float) * k.n * ((k.a_shape.empty() ? 0 : 1) + (k.b_shape.empty() ? 0 : 1));
    *kernel = reinterpret_cast<rk_kernel*>(new Kernel(k));
  });
}
rk_error* execute(rk_kernel* kernel, const rk_tensor_view* in, size_t, const rk_tensor_view* out, size_t, void* workspace,
                  size_t) {
  return guarded([&] {
    const Kernel& k = *reinterpret_cast<const Kernel*>(kernel);
    auto f = [](const rk_tensor_view& t) { return static_cast<float*>(t.data); };
    switch (k.kind) {
      case Kernel::Kind::kUnary: rematkit::hwy_backend::unary(static_cast<Unary>(k.op), f(in[0]), f(out[0]), k.n); break;
      case Kernel::Kind::kPow: rematkit::hwy_backend::integer_pow(k.power, f(in[0]), f(out[0]), k.n); break;
      case Kernel::Kind::kBinary: case Kernel::Kind::kCompare: case Kernel::Kind::kBitwise: {
        if (k.rows) {  // row by row, nothing expanded
          const size_t out_bytes = k.kind == Kernel::Kind::kCompare ? 1 : 4;
          auto f32 = [](const void* p) { return static_cast<const float*>(p); };
          if (k.kind == Kernel::Kind::kBinary) {
            const auto loop = rematkit::hwy_backend::loops().binary;
            by_rows(k, in[0].data, in[1].data, out[0].data, out_bytes, workspace, [&](const void* a, bool as, const void* b, bool bs, void* y, size_t n) {
              loop(k.op, f32(a), as, f32(b), bs, static_cast<float*>(y), n);
            });
          } else if (k.kind == Kernel::Kind::kCompare) {
            const auto loop = rematkit::hwy_backend::loops().compare;
            by_rows(k, in[0].data, in[1].data, out[0].data, out_bytes, workspace, [&](const void* a, bool as, const void* b, bool bs, void* y, size_t n) {
              loop(k.op, f32(a), as, f32(b), bs, static_cast<uint8_t*>(y), n);
            });
          } else {
            by_rows(k, in[0].data, in[1].data, out[0].data, out_bytes, workspace, [&](const void* a, bool as, const void* b, bool bs, void* y, size_t n) {
              rematkit::hwy_backend::bitwise(static_cast<Bitwise>(k.op), static_cast<const uint32_t*>(a), as,
                                             static_cast<const uint32_t*>(b), bs, static_cast<uint32_t*>(y), n);
            });
          }
          break;
        }
        // Size-1 dims spread in the workspace: the copies move 4-byte elements, whatever they hold.
        float* scratch = static_cast<float*>(workspace);
        const float* a = expanded(k.a_shape, k.out_shape, f(in[0]), scratch);
        const float* b = expanded(k.b_shape, k.out_shape, f(in[1]), scratch);
        if (k.kind == Kernel::Kind::kBitwise)
          rematkit::hwy_backend::bitwise(static_cast<Bitwise>(k.op), reinterpret_cast<const uint32_t*>(a), k.a_scalar,
                                         reinterpret_cast<const uint32_t*>(b), k.b_scalar,
                                         static_cast<uint32_t*>(out[0].data), k.n);
        else if (k.kind == Kernel::Kind::kBinary)
          rematkit::hwy_backend::binary(static_cast<Binary>(k.op), a, k.a_scalar, b, k.b_scalar, f(out[0]), k.n);
        else
          rematkit::hwy_backend::compare(static_cast<Compare>(k.op), a, k.a_scalar, b, k.b_scalar,
                                         static_cast<uint8_t*>(out[0].data), k.n);
        break;
      }
      case Kernel::Kind::kSelect:
        rematkit::hwy_backend::select(static_cast<const uint8_t*>(in[0].data), k.a_scalar, f(in[1]), f(in[2]), f(out[0]), k.n);
        break;
      case Kernel::Kind::kPermute: k.lhs.apply(f(in[0]), f(out[0])); break;
      case Kernel::Kind::kReverse: reverse(k.out_shape, k.dims, f(in[0]), f(out[0])); break;
      case Kernel::Kind::kBroadcast:
        if (k.element_bytes == 1)
          broadcast(k.in_shape, k.dims, k.out_shape, static_cast<const uint8_t*>(in[0].data), static_cast<uint8_t*>(out[0].data));
        else
          broadcast(k.in_shape, k.dims, k.out_shape, static_cast<const uint32_t*>(in[0].data),
                    static_cast<uint32_t*>(out[0].data));  // the bits, whatever the 4-byte dtype
        break;
      case Kernel::Kind::kSplit:
        for (size_t r = 0; r < k.outer; ++r)
          std::copy_n(f(in[0]) + r * k.in_run + k.at, k.out_run, f(out[0]) + r * k.out_run);
        break;
      case Kernel::Kind::kPad: {
        const float fill = f(in[1])[0];
        for (size_t r = 0; r < k.outer; ++r) {
          float* to = f(out[0]) + r * k.out_run;
          std::fill(to, to + k.at, fill);
          std::copy_n(f(in[0]) + r * k.in_run, k.in_run, to + k.at);
          std::fill(to + k.at + k.in_run, to + k.out_run, fill);
        }
        break;
      }
      case Kernel::Kind::kRandomBits:
        rematkit::hwy_backend::random_bits(static_cast<const uint32_t*>(in[0].data), k.outer, k.out_run, k.element_bytes == 1,
                                           out[0].data);
        break;
      case Kernel::Kind::kRandomFoldIn:
        rematkit::hwy_backend::random_fold_in(static_cast<const uint32_t*>(in[0].data), static_cast<const uint32_t*>(in[1].data),
                                              k.a_scalar, k.n, static_cast<uint32_t*>(out[0].data));
        break;
      case Kernel::Kind::kCompareInt:
        if (k.element_bytes == 0)
          compare_ints(static_cast<Compare>(k.op), static_cast<const uint32_t*>(in[0].data), k.a_scalar,
                       static_cast<const uint32_t*>(in[1].data), k.b_scalar, static_cast<uint8_t*>(out[0].data), k.n);
        else
          compare_ints(static_cast<Compare>(k.op), static_cast<const int32_t*>(in[0].data), k.a_scalar,
                       static_cast<const int32_t*>(in[1].data), k.b_scalar, static_cast<uint8_t*>(out[0].data), k.n);
        break;
      case Kernel::Kind::kConvertToF32:
        if (k.element_bytes == 1) {
          const uint8_t* from = static_cast<const uint8_t*>(in[0].data);
          for (size_t i = 0; i < k.n; ++i) f(out[0])[i] = from[i] ? 1.0f : 0.0f;
        } else {
          const int32_t* from = static_cast<const int32_t*>(in[0].data);
          for (size_t i = 0; i < k.n; ++i) f(out[0])[i] = static_cast<float>(from[i]);
        }
        break;
      case Kernel::Kind::kIota: {
        // Runs of out_run equal values counting 0 .. at-1, written once, then that period copied:
        // no division per element, and no call per element when the runs are single (the last dim).
        uint32_t* to = static_cast<uint32_t*>(out[0].data);
        const size_t period = std::min(k.n, k.at * k.out_run);
        for (size_t v = 0, i = 0; i < period; ++v, i += k.out_run)
          fill(static_cast<uint32_t>(v), to + i, std::min(k.out_run, period - i));
        for (size_t i = period; i < k.n; i += period) std::memcpy(to + i, to, std::min(period, k.n - i) * sizeof(uint32_t));
        break;
      }
      case Kernel::Kind::kReduce: {
        const float* rows = f(in[0]);
        if (!k.lhs.identity()) {
          k.lhs.apply(rows, static_cast<float*>(workspace));
          rows = static_cast<const float*>(workspace);
        }
        rematkit::hwy_backend::reduce_rows(k.is_max, rows, f(out[0]), k.n, k.k);
        break;
      }
      case Kernel::Kind::kSoftmax:
        rematkit::hwy_backend::softmax_rows(f(in[0]), f(out[0]), k.k == 0 ? 0 : k.n / k.k, k.k);
        break;
      case Kernel::Kind::kReduceLeading: {
        const size_t len = k.n / k.outer;
        for (size_t o = 0; o < k.outer; ++o)
          rematkit::hwy_backend::reduce_leading(k.is_max, f(in[0]) + o * k.k * len, f(out[0]) + o * len, k.k, len);
        break;
      }
      case Kernel::Kind::kGatherRows:
        for (size_t r = 0; r < k.n; ++r) {
          const int64_t row = row_of(k, in[1].data, r);
          float* to = f(out[0]) + r * k.k;
          if (row < 0) std::fill(to, to + k.k, k.fill);
          else std::copy(f(in[0]) + static_cast<size_t>(row) * k.k, f(in[0]) + (static_cast<size_t>(row) + 1) * k.k, to);
        }
        break;
      case Kernel::Kind::kScatterAddRows:  // the table, then each update row added into its row, in order
        std::copy(f(in[0]), f(in[0]) + k.m * k.k, f(out[0]));
        for (size_t r = 0; r < k.n; ++r)
          if (const int64_t row = row_of(k, in[1].data, r); row >= 0)
            rematkit::hwy_backend::binary(Binary::kAdd, f(out[0]) + static_cast<size_t>(row) * k.k,
                                          false, f(in[2]) + r * k.k, false, f(out[0]) + static_cast<size_t>(row) * k.k, k.k);
        break;
      case Kernel::Kind::kGemm: run_product(k, f(in[0]), f(in[1]), f(out[0]), static_cast<float*>(workspace), nullptr); break;
      case Kernel::Kind::kFused: {
        // Each value's buffer: an input's, an output's, or none (inside the parts' segments).
        // On this call's stack: a run allocates nothing, and a call that a waiting thread runs
        // meanwhile (oneTBB steals work) has its own.
        std::array<void*, rematkit::hwy_backend::FusedElementwise::kMaxValues> buffers{};
        const std::span<void*> values(buffers.data(), k.buffer_of.size());
        for (size_t v = 0; v < k.buffer_of.size(); ++v) {
          const int b = k.buffer_of[v];
          if (b >= 0) values[v] = in[b].data;
          else if (b != Kernel::kInside) values[v] = out[-2 - b].data;
        }
        if (!k.after_product) {
          run_in_chunks(*k.parts, values);
          break;
        }
        const size_t product = k.product_value;
        float* c = values[product]       ? static_cast<float*>(values[product])
                   : k.product_into >= 0 ? static_cast<float*>(values[static_cast<size_t>(k.product_into)])
                                         : static_cast<float*>(workspace) + k.product_at;
        values[product] = c;
        const auto on_block = [&](size_t row_begin, size_t row_end, size_t col_begin, size_t col_end) {
          for (size_t r = row_begin; r < row_end; ++r) k.parts->run(values, r * k.cols + col_begin, r * k.cols + col_end);
        };
        const rematkit::hwy_backend::Epilogue epilogue(on_block);
        run_product(k, static_cast<const float*>(values[k.product_operands[0]]),
                    static_cast<const float*>(values[k.product_operands[1]]), c, static_cast<float*>(workspace), &epilogue);
        break;
      }
    }
  });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Kernel*>(kernel); }

const rk_backend_api kBackend = {sizeof(rk_backend_api), "highway", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy, &expected_ns};
const rk_backend_api* const kBackends[] = {&kBackend};
// Says which SIMD target the kernels dispatch to on this CPU (REMATKIT_LOG=1 shows it).
rk_error* initialize(const rk_host_api* host) {
  rematkit::plugin::remember_host(host);
  rematkit::plugin::log(RK_LOG_INFO, std::string("highway: kernels dispatch to ") + rematkit::hwy_backend::chosen_target());
  return nullptr;
}

const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "highway-backend", "0.1.0",
                            &initialize, 0, nullptr, 1, kBackends};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
