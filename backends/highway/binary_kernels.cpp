#include "highway/binary_kernels.hpp"

#include <algorithm>
#include <cstddef>

#include "highway/elementwise_costs.hpp"
#include "highway/layout.hpp"
#include "highway/primitive_ops.hpp"

namespace rematkit::hwy_backend {
namespace {

// The most elements short rows are grouped into (BinaryOperands::group): a Highway loop call's worth.
constexpr size_t kGroupedRow = 1024;

// Operand `s` of a binary kind read row by row, rows of out's dims from j on: as one value per row,
// or one row for all (or as the output, or a rank-0 scalar, when s is empty); false otherwise.
bool spread(const Dims& s, const Dims& out, size_t j, BinaryOperands::Spread& how) {
  using Spread = BinaryOperands::Spread;
  if (s.empty()) return how = Spread::kFull, true;
  bool per_row = true, each_row = true;
  for (size_t i = 0; i < s.size(); ++i) {
    per_row = per_row && (i < j ? s[i] == out[i] : s[i] == 1);
    each_row = each_row && (i < j ? s[i] == 1 : s[i] == out[i]);
  }
  if (per_row) how = Spread::kPerRow;
  else if (each_row) how = Spread::kEachRow;
  return per_row || each_row;
}

// `loop(a, a_scalar, b, b_scalar, y, n)` on each of k's rows: operands of 4-byte elements, results of
// `out_bytes`.
template <class Loop>
void by_rows(const BinaryOperands& k, const void* a, const void* b, void* y, size_t out_bytes, void* workspace, Loop loop) {
  using Spread = BinaryOperands::Spread;
  if (k.group > 1) {  // each-row operands repeated over a group of rows (BinaryOperands::group)
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
    loop(ar, a_scalar, br, b_scalar, static_cast<std::byte*>(y) + out_bytes * r * k.inner, k.inner);
  }
}

// A binary kind's run: `row_loop` on each row where the operands leave whole rows (nothing
// expanded), else `whole(a, b)` on the operands with their size-1 dims spread in the workspace
// (the copies move 4-byte elements, whatever they hold).
template <class RowLoop, class Whole>
void run_binary(const BinaryOperands& k, const rk_tensor_view* in, const rk_tensor_view* out, size_t out_bytes,
                void* workspace, RowLoop row_loop, Whole whole) {
  if (k.rows) return by_rows(k, in[0].data, in[1].data, out[0].data, out_bytes, workspace, row_loop);
  float* scratch = static_cast<float*>(workspace);
  const float* a = expanded(k.a_shape, k.out_shape, f32(in[0]), scratch);
  const float* b = expanded(k.b_shape, k.out_shape, f32(in[1]), scratch);
  whole(a, b);
}

const float* as_f32(const void* p) { return static_cast<const float*>(p); }
const uint32_t* as_u32(const void* p) { return static_cast<const uint32_t*>(p); }

}  // namespace

std::optional<BinaryOperands> BinaryOperands::of(const Dims& a, const Dims& b, const Dims& out) {
  auto fits = [&](const Dims& s) {
    if (s.empty() || s == out) return true;
    if (s.size() != out.size()) return false;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != out[i] && s[i] != 1) return false;
    return true;
  };
  if (!fits(a) || !fits(b)) return std::nullopt;
  BinaryOperands k;
  k.n = count(out);
  k.out_shape = out;
  k.a_scalar = a.empty() && !out.empty();
  k.b_scalar = b.empty() && !out.empty();
  if (!a.empty() && a != out) k.a_shape = a;
  if (!b.empty() && b != out) k.b_shape = b;
  if (k.a_shape.empty() && k.b_shape.empty()) return k;
  // Size-1 dims that leave whole rows: a layer norm's [B, S, 1] beside [B, S, D] is one value per
  // row, a bias's [1, 1, D] one row for all. Then each row is one call with a scalar or a pointer,
  // and nothing is expanded; rows shorter than a few vectors are expanded as before.
  for (size_t j = 0; j <= out.size(); ++j) {
    if (!spread(k.a_shape, out, j, k.a_spread) || !spread(k.b_shape, out, j, k.b_spread)) continue;
    const size_t inner = count(Dims(out.begin() + static_cast<long>(j), out.end()));
    if (inner >= 32) k.rows = count(out) / inner, k.inner = inner;
    if (k.a_spread != Spread::kPerRow && k.b_spread != Spread::kPerRow && inner > 0) {
      const size_t rows = count(out) / inner;
      while (k.group * 2 * inner <= kGroupedRow && rows % (k.group * 2) == 0) k.group *= 2;
      if (k.group > 1) k.rows = rows / k.group, k.inner = inner * k.group;
    }
    break;
  }
  return k;
}

size_t BinaryOperands::workspace() const {
  if (rows)  // run row by row: nothing to expand, the each-row operands repeated over a group
    return group == 1 ? 0
                      : 4 * inner * ((a_spread == Spread::kEachRow && !a_scalar ? 1 : 0) +
                                     (b_spread == Spread::kEachRow && !b_scalar ? 1 : 0));
  // operands with size-1 dims are expanded there
  return sizeof(float) * n * ((a_shape.empty() ? 0 : 1) + (b_shape.empty() ? 0 : 1));
}

double BinaryOperands::expected_ns() const {
  const double elements = static_cast<double>(n);
  if (a_shape.empty() && b_shape.empty()) return one_pass_ns(elements);
  if (!rows) return -1;  // expanded first: slow, no estimate
  return by_rows_ns(group > 1, elements);
}

std::optional<BinaryOperands> BinaryOperands::of(const Equation& eq) {
  return of(shape_of(eq.view->inputs[0]), shape_of(eq.view->inputs[1]), eq.out);
}

std::optional<BinaryKernel> BinaryKernel::prepare(const Equation& eq) {
  if (!eq.prim || !eq.all_f32) return std::nullopt;
  const std::optional<Binary> op = op_of(kBinaries, *eq.prim);
  if (!op) return std::nullopt;
  std::optional<BinaryOperands> operands = BinaryOperands::of(eq);
  if (!operands) return std::nullopt;
  return BinaryKernel{*op, std::move(*operands)};
}

void BinaryKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  const auto loop = loops().binary;
  const BinaryOperands& k = operands;
  run_binary(
      k, in, out, 4, workspace,
      [&](const void* a, bool as, const void* b, bool bs, void* y, size_t n) {
        loop(static_cast<int>(op), as_f32(a), as, as_f32(b), bs, static_cast<float*>(y), n);
      },
      [&](const float* a, const float* b) { binary(op, a, k.a_scalar, b, k.b_scalar, f32(out[0]), k.n); });
}

std::optional<CompareKernel> CompareKernel::prepare(const Equation& eq) {
  if (!eq.prim) return std::nullopt;
  const std::optional<Compare> op = op_of(kCompares, *eq.prim);
  const rk_equation_view* e = eq.view;
  if (!op || e->inputs[0].dtype != RK_DTYPE_F32 || e->inputs[1].dtype != RK_DTYPE_F32) return std::nullopt;
  std::optional<BinaryOperands> operands = BinaryOperands::of(eq);
  if (!operands) return std::nullopt;
  return CompareKernel{*op, std::move(*operands)};
}

void CompareKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  const auto loop = loops().compare;
  const BinaryOperands& k = operands;
  uint8_t* y = static_cast<uint8_t*>(out[0].data);
  run_binary(
      k, in, out, 1, workspace,
      [&](const void* a, bool as, const void* b, bool bs, void* row, size_t n) {
        loop(static_cast<int>(op), as_f32(a), as, as_f32(b), bs, static_cast<uint8_t*>(row), n);
      },
      [&](const float* a, const float* b) { compare(op, a, k.a_scalar, b, k.b_scalar, y, k.n); });
}

std::optional<BitwiseKernel> BitwiseKernel::prepare(const Equation& eq) {
  if (!eq.prim) return std::nullopt;
  const std::optional<Bitwise> op = op_of(kBitwises, *eq.prim);
  const rk_equation_view* e = eq.view;
  if (!op || e->num_inputs != 2) return std::nullopt;
  const int32_t dtype = e->outputs[0].dtype;
  const bool lanes = dtype == RK_DTYPE_I32 || (dtype == RK_DTYPE_U32 && *op != Bitwise::kShiftRightArithmetic);
  if (!lanes || e->inputs[0].dtype != dtype || e->inputs[1].dtype != dtype) return std::nullopt;
  std::optional<BinaryOperands> operands = BinaryOperands::of(eq);
  if (!operands) return std::nullopt;
  return BitwiseKernel{*op, std::move(*operands)};
}

void BitwiseKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  const BinaryOperands& k = operands;
  uint32_t* y = static_cast<uint32_t*>(out[0].data);
  run_binary(
      k, in, out, 4, workspace,
      [&](const void* a, bool as, const void* b, bool bs, void* row, size_t n) {
        bitwise(op, as_u32(a), as, as_u32(b), bs, static_cast<uint32_t*>(row), n);
      },
      [&](const float* a, const float* b) { bitwise(op, as_u32(a), k.a_scalar, as_u32(b), k.b_scalar, y, k.n); });
}

}  // namespace rematkit::hwy_backend
