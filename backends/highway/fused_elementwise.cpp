#include "highway/fused_elementwise.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "highway/elementwise_kernels.hpp"
#include "highway/primitive_ops.hpp"

namespace rematkit::hwy_backend {
namespace {

// The elements of a row when broadcast part `p` spreads one value per row of `out`.
std::optional<size_t> row_period(const plugin::FusedPart& p, const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> dims;
  for (const rk_value& param : p.params)
    if (param.name && std::string_view(param.name) == "broadcast_dimensions") dims = plugin::ints_of(param);
  const size_t trailing = plugin::row_spread_trailing_dims(in, dims, out);
  if (trailing == 0) return std::nullopt;
  return count(std::vector<int64_t>(out.end() - static_cast<long>(trailing), out.end()));
}

// f32, u32 and i32 values share the segment buffers: the kernels read their 32 bits as they are.
bool four_bytes(int32_t dtype) { return dtype == RK_DTYPE_F32 || dtype == RK_DTYPE_U32 || dtype == RK_DTYPE_I32; }
// bf16 and f16 values are held in the segment buffers as f32 (half_precision.hpp).
bool is_half(int32_t dtype) { return dtype == RK_DTYPE_BF16 || dtype == RK_DTYPE_F16; }
bool is_float(int32_t dtype) { return dtype == RK_DTYPE_F32 || is_half(dtype); }

// The elements of a row when `s` is `out`'s leading dims followed by size-1 dims (at least one
// trailing dim of `out` over 1); else 0.
size_t per_row_period(const std::vector<int64_t>& s, const std::vector<int64_t>& out) {
  if (s.size() != out.size()) return 0;
  size_t kept = 0;
  while (kept < s.size() && s[kept] == out[kept]) ++kept;
  for (size_t d = kept; d < s.size(); ++d)
    if (s[d] != 1) return 0;
  const size_t period = count(std::vector<int64_t>(out.begin() + static_cast<long>(kept), out.end()));
  return period > 1 ? period : 0;
}

// convert_element_type between bool or i32 and a float value (bf16 and f16 held as f32), as the
// reference converts (compute.cpp, element_values.hpp): from bool 0 or 1, from i32 the nearest f32
// (then rounded to a bf16 or f16 part's dtype; those two are half_loops().convert_round's, into f32
// convert_to_f32's); to bool whether it is nonzero (a NaN is); to i32 toward zero, saturating, a
// NaN to 0 (XLA's conversion).
enum class Conversion { kFromBool, kFromI32, kToBool, kToI32 };
void convert(Conversion c, const void* x, bool scalar, void* y, size_t len) {
  const float* from = static_cast<const float*>(x);
  auto to_i32 = [](float v) {
    if (std::isnan(v)) return int32_t{0};
    const float t = std::trunc(v);
    if (t < -2147483648.0f) return std::numeric_limits<int32_t>::min();
    if (t >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
    return static_cast<int32_t>(t);
  };
  const size_t step = scalar ? 0 : 1;
  if (c == Conversion::kToBool)
    for (size_t i = 0; i < len; ++i) static_cast<uint8_t*>(y)[i] = from[i * step] != 0.0f ? 1 : 0;
  else if (c == Conversion::kToI32)
    for (size_t i = 0; i < len; ++i) static_cast<int32_t*>(y)[i] = to_i32(from[i * step]);
}

// Whether integer_pow's repeated products of a bf16 or f16 operand are exact in f32, so that the f32
// loop gives the reference's value (its products in double, rounded to f32 once): a bf16 value's 8
// significant bits make at most 24 in its cube, an f16's 11 at most 22 in its square, and f32 holds
// 24. A square below f32's normal range could round, but then the cube is below half the smallest
// subnormal, a zero of the operand's sign, as the reference's is; lax's negative powers divide,
// which rounds.
bool exact_in_f32(int32_t dtype, int64_t power) { return power >= 0 && power <= (dtype == RK_DTYPE_BF16 ? 3 : 2); }

}  // namespace

std::optional<FusedElementwise> FusedElementwise::of(const plugin::Fusion& fusion, size_t first) {
  if (first >= fusion.parts().size() || fusion.num_values() > kMaxValues) return std::nullopt;
  FusedElementwise f;
  f.elements_ = count(fusion.parts()[first].shape);
  f.access_.resize(fusion.num_values());
  for (size_t j = first; j < fusion.parts().size(); ++j)
    if (!f.add_part(fusion, first, j)) return std::nullopt;
  // Segments that stop at a repeat's period would cut rows.
  if (f.row_ > 1 && !f.periods_.empty()) return std::nullopt;
  f.pair_binaries();
  f.pair_halves();
  f.read_bits();
  f.drop_unread_f32();
  if (f.elements_ * sizeof(float) >= kStreamFromBytes) f.stage_results();
  return f;
}

void FusedElementwise::stage_results() {
  for (const Part& p : parts_) {
    Access& a = access_[static_cast<size_t>(p.value)];
    const bool read_as_bitcast =
        std::any_of(access_.begin(), access_.end(), [&](const Access& b) { return b.same_as == p.value; });
    if (!p.result || p.kind == Kind::kReduceRows || !four_bytes(p.dtype) || a.slot >= 0 || read_as_bitcast) continue;
    if (streamed_.size() == static_cast<size_t>(kMaxStaged)) return;
    a.staged = static_cast<int>(streamed_.size());
    streamed_.push_back(p.value);
  }
}

bool FusedElementwise::read_operand(const plugin::Fusion& fusion, const std::vector<int64_t>& shape, int64_t v) {
  Access& a = access_[static_cast<size_t>(v)];
  const std::vector<int64_t>& s = fusion.shape(v);
  a.is_bool = fusion.dtype(v) == RK_DTYPE_BOOL;
  a.dtype = fusion.dtype(v);
  const bool half = is_half(a.dtype);
  if (!four_bytes(a.dtype) && !a.is_bool && !half) return false;
  // A bf16 or f16 operand is promoted into a slot at each segment's start (promote()).
  auto promoted = [&] {
    if (!half || a.slot >= 0) return true;
    if (!take_slot(false, a.slot)) return false;
    promoted_.push_back(static_cast<int>(v));
    return true;
  };
  if (s == shape) return promoted();
  if (count(s) == 1) return a.mode = Access::Mode::kScalar, promoted();
  // The output's leading dims, then size-1 dims: one value per row (a layer norm's [B, S, 1] mean
  // beside [B, S, D], a softmax's row max). Spread into a slot at each segment's start.
  if (const size_t period = per_row_period(s, shape); period > 0 && is_float(a.dtype)) {
    if (a.mode == Access::Mode::kPerRow) return a.slot >= 0;  // a fill reads it otherwise: decline
    if (!take_slot(true, a.slot)) return false;
    a.mode = Access::Mode::kPerRow;
    a.period = period;
    spread_.push_back(static_cast<int>(v));
    return true;
  }
  // Size-1 leading dims, then the output's trailing dims: element i reads i mod count(s).
  if (s.size() > shape.size()) return false;
  const size_t offset = shape.size() - s.size();
  bool leading = true;
  for (size_t d = 0; d < s.size(); ++d) {
    const bool matches = s[d] == shape[offset + d];
    // A bf16 or f16 operand's leading size-1 dims may face the output's own size-1 dims too (an
    // RMSNorm's [1, 1, D] beside [1, S, D], whose single equations run here alone); f32 chains
    // keep the rule they fuse by.
    if (leading && s[d] == 1 && (!matches || half)) continue;
    leading = false;
    if (!matches) return false;
  }
  if (a.mode == Access::Mode::kRepeat) return true;  // read by an earlier part too
  a.mode = Access::Mode::kRepeat;
  a.period = count(s);
  // A bias's [1, 1, 1, C] beside [B, H, W, C] would cut segments to C elements, a loop call per
  // part each: a tile of it keeps them whole.
  if (!a.is_bool && a.period <= kSegment / 2 && tiled_.size() < static_cast<size_t>(kMaxTiles)) {
    a.tile = static_cast<int>(tiled_.size());
    tiled_.push_back(static_cast<int>(v));
  } else {
    periods_.push_back(a.period);
    return promoted();
  }
  return true;
}

bool FusedElementwise::add_part(const plugin::Fusion& fusion, size_t first, size_t j) {
  const std::vector<int64_t>& shape = fusion.parts()[first].shape;
  const plugin::FusedPart& p = fusion.parts()[j];
  const bool reduces = p.prim == Prim::kReduceSum || p.prim == Prim::kReduceMax;
  if (!p.prim || (p.shape != shape && !reduces)) return false;
  for (int64_t v : p.operands)
    if (std::find(reduced_.begin(), reduced_.end(), v) != reduced_.end()) return false;
  const int value = static_cast<int>(fusion.num_inputs() + j);
  // A per-row broadcast's operand is read its own way (fit_fill). The values before `first` the
  // parts read: inputs, or a product's result (first == 1).
  const bool spreads_rows = p.prim == Prim::kBroadcastInDim && p.operands.size() == 1 && count(fusion.shape(p.operands[0])) != 1;
  // random_bits' key is read as its two words (fit).
  const bool hashes_key = p.prim == Prim::kRandomBits;
  for (int64_t v : p.operands)
    if (!spreads_rows && !hashes_key && v < static_cast<int64_t>(fusion.num_inputs() + first) && !read_operand(fusion, shape, v))
      return false;
  Part part;
  part.value = value;
  part.result = fusion.is_result(value);
  part.operands.assign(p.operands.begin(), p.operands.end());
  switch (fit(fusion, first, p, part)) {
    case Fit::kDecline: return false;
    case Fit::kNoPass: return true;
    case Fit::kPart: break;
  }
  // The kernels read a scalar operand only where they take a scalar flag: not a unary's, a
  // power's or select's cases; repeated operands are pointers into the segment, so any kernel.
  for (size_t o = 0; o < part.operands.size(); ++o) {
    const Access& a = access_[static_cast<size_t>(part.operands[o])];
    const bool takes_scalar = part.kind == Kind::kBinary || part.kind == Kind::kCompare || part.kind == Kind::kCompareInt ||
                              part.kind == Kind::kFill ||
                              part.kind == Kind::kBitwise || part.kind == Kind::kReference || part.kind == Kind::kRandomBits ||
                              (part.kind == Kind::kBinary2 && is_half(p.dtype)) || (part.kind == Kind::kSelect && o == 0);
    if (a.mode == Access::Mode::kScalar && !takes_scalar) return false;
  }
  if (!fit_half(fusion, p, part)) return false;
  Access& mine = access_[static_cast<size_t>(value)];
  mine.is_bool = p.dtype == RK_DTYPE_BOOL;
  mine.dtype = p.dtype;
  // A bf16 or f16 result is rounded there, then stored.
  if ((!fusion.is_result(value) || is_half(p.dtype)) && !take_slot(!fusion.is_result(value), mine.slot)) return false;
  parts_.push_back(std::move(part));
  return true;
}

FusedElementwise::Fit FusedElementwise::fit(const plugin::Fusion& fusion, size_t first, const plugin::FusedPart& p, Part& part) {
  auto f32 = [&](int64_t v) { return fusion.dtype(v) == RK_DTYPE_F32; };
  auto int32 = [&](int64_t v) { return fusion.dtype(v) == RK_DTYPE_U32 || fusion.dtype(v) == RK_DTYPE_I32; };
  const Prim prim = *p.prim;
  bool f32_operands = true, int32_operands = true;
  for (int64_t v : p.operands) f32_operands = f32_operands && f32(v), int32_operands = int32_operands && int32(v);
  // Operands all of one floating dtype (f32, bf16 or f16), and the result of it too.
  const int32_t t = p.operands.empty() ? p.dtype : fusion.dtype(p.operands[0]);
  bool float_operands = is_float(t);
  for (int64_t v : p.operands) float_operands = float_operands && fusion.dtype(v) == t;
  const bool same_float = float_operands && p.dtype == t;
  const std::optional<Bitwise> wop = op_of(kBitwises, prim);
  if (auto op = op_of(kUnaries, prim); op && p.operands.size() == 1 && same_float) {
    part.kind = Kind::kUnary;
    part.op = static_cast<int>(*op);
  } else if (prim == Prim::kConvertElementType && p.operands.size() == 1 && is_float(t) && is_float(p.dtype)) {
    part.kind = Kind::kUnary;  // the value moves; a bf16 or f16 result is rounded after it
    part.op = static_cast<int>(Unary::kCopy);
  } else if (prim == Prim::kIntegerPow && same_float) {
    part.kind = Kind::kPow;
    for (const rk_value& param : p.params)
      if (param.name && std::string_view(param.name) == "y") part.power = param.int_value;
  } else if (auto bop = op_of(kBinaries, prim); bop && p.operands.size() == 2 && same_float) {
    part.kind = Kind::kBinary;
    part.op = static_cast<int>(*bop);
  } else if (auto cop = op_of(kCompares, prim); cop && p.operands.size() == 2 && float_operands && p.dtype == RK_DTYPE_BOOL) {
    part.kind = Kind::kCompare;
    part.op = static_cast<int>(*cop);
  } else if (prim == Prim::kClamp && p.operands.size() == 3 && same_float && is_half(p.dtype)) {
    part.kind = Kind::kBinary2;  // min(max(x, lo), hi): clamp's operands are (lo, x, hi)
    part.op = static_cast<int>(Binary::kMax);
    part.op2 = static_cast<int>(Binary::kMin);
    part.operands = {static_cast<int>(p.operands[1]), static_cast<int>(p.operands[0]), static_cast<int>(p.operands[2])};
  } else if (prim == Prim::kPow && p.operands.size() == 2 && same_float) {
    part.kind = Kind::kReference;  // no f32 kernel: the reference's bits, in f32 too
  } else if (auto cop = op_of(kCompares, prim); cop && p.operands.size() == 2 && int32_operands &&
             fusion.dtype(p.operands[1]) == t && p.dtype == RK_DTYPE_BOOL) {
    part.kind = Kind::kCompareInt;  // a one-hot's class numbers against its labels, a mask's positions
    part.op = static_cast<int>(*cop);
    part.op2 = t == RK_DTYPE_U32 ? 1 : 0;
  } else if (prim == Prim::kIota && p.operands.empty() && (p.dtype == RK_DTYPE_I32 || p.dtype == RK_DTYPE_F32)) {
    if (!fit_iota(p, part)) return Fit::kDecline;
  } else if (prim == Prim::kRandomBits && p.operands.size() == 1 && p.dtype == RK_DTYPE_U32 &&
             fusion.dtype(p.operands[0]) == RK_DTYPE_KEY_FRY && fusion.shape(p.operands[0]).empty() &&
             p.operands[0] < static_cast<int64_t>(fusion.num_inputs() + first)) {
    // One key's words, numbered as the output's elements (random_bits.cpp): read where the key lies.
    for (const rk_value& param : p.params)
      if (param.name && std::string_view(param.name) == "bit_width" && param.int_value != 32) return Fit::kDecline;
    Access& key = access_[static_cast<size_t>(p.operands[0])];
    if (key.mode != Access::Mode::kFull || key.slot >= 0) return Fit::kDecline;
    key.mode = Access::Mode::kScalar;
    key.dtype = RK_DTYPE_KEY_FRY;
    part.kind = Kind::kRandomBits;
  } else if (prim == Prim::kConvertElementType && p.operands.size() == 1 && is_float(p.dtype) &&
             (t == RK_DTYPE_BOOL || t == RK_DTYPE_I32)) {
    part.kind = Kind::kConvert;  // a mask or a count into floats
    part.op = static_cast<int>(t == RK_DTYPE_BOOL ? Conversion::kFromBool : Conversion::kFromI32);
  } else if (prim == Prim::kConvertElementType && p.operands.size() == 1 && is_half(t) &&
             (p.dtype == RK_DTYPE_BOOL || p.dtype == RK_DTYPE_I32)) {
    part.kind = Kind::kConvert;
    part.op = static_cast<int>(p.dtype == RK_DTYPE_BOOL ? Conversion::kToBool : Conversion::kToI32);
  } else if (prim == Prim::kBroadcastInDim && p.operands.size() == 1 &&
             (same_float || (int32_operands && p.dtype == t))) {  // i32 and u32 moved as their bits
    if (!fit_fill(fusion, first, p, part)) return Fit::kDecline;
  } else if (wop && p.operands.size() == 2 && int32_operands && p.dtype == fusion.dtype(p.operands[0]) &&
             (*wop != Bitwise::kShiftRightArithmetic || p.dtype == RK_DTYPE_I32)) {
    // Dropout's recipe: random bits shifted and or-ed into a float's mantissa, as in bitwise.cpp.
    part.kind = Kind::kBitwise;
    part.op = static_cast<int>(*wop);
  } else if (prim == Prim::kBitcastConvertType && p.operands.size() == 1 && four_bytes(fusion.dtype(p.operands[0])) &&
             four_bytes(p.dtype)) {
    return fit_bitcast(fusion, p, part);
  } else if ((prim == Prim::kReduceSum || prim == Prim::kReduceMax) && first == 0 && p.operands.size() == 1 &&
             f32_operands && p.dtype == RK_DTYPE_F32 && fusion.is_result(part.value)) {
    if (!fit_reduction(fusion, first, p, part)) return Fit::kDecline;
  } else if (prim == Prim::kSelectN && p.operands.size() == 3 && fusion.dtype(p.operands[0]) == RK_DTYPE_BOOL &&
             is_float(p.dtype) && fusion.dtype(p.operands[1]) == p.dtype && fusion.dtype(p.operands[2]) == p.dtype) {
    part.kind = Kind::kSelect;
  } else {
    return Fit::kDecline;
  }
  return Fit::kPart;
}

// A scalar spread over the shape, or one value per row, filled into the segment a row's run at a
// time.
bool FusedElementwise::fit_fill(const plugin::Fusion& fusion, size_t first, const plugin::FusedPart& p, Part& part) {
  part.kind = Kind::kFill;
  Access& operand = access_[static_cast<size_t>(p.operands[0])];
  const size_t values = count(fusion.shape(p.operands[0]));
  const bool promoted_scalar = is_half(operand.dtype) && values == 1;  // in its slot (read_operand)
  if ((operand.slot >= 0 && !promoted_scalar) || p.operands[0] >= static_cast<int64_t>(fusion.num_inputs() + first)) return false;
  operand.dtype = fusion.dtype(p.operands[0]);
  if (values == 1) {
    operand.mode = Access::Mode::kScalar;
    return true;
  }
  const std::optional<size_t> period = row_period(p, fusion.shape(p.operands[0]), fusion.parts()[first].shape);
  if (!period || (operand.mode != Access::Mode::kFull && operand.mode != Access::Mode::kPerRow)) return false;
  if (operand.mode == Access::Mode::kPerRow && operand.period != *period) return false;
  operand.mode = Access::Mode::kPerRow;  // read only by this fill, a run of values per row
  operand.period = *period;
  return true;
}

// iota's count along `dimension`: runs of equal values, as many as the trailing dims' elements.
// Its values stay exact in f32 (2^24) and within i32.
bool FusedElementwise::fit_iota(const plugin::FusedPart& p, Part& part) {
  int64_t dim = -1;
  for (const rk_value& param : p.params)
    if (param.name && std::string_view(param.name) == "dimension" && param.kind == RK_VALUE_INT) dim = param.int_value;
  if (dim < 0 || dim >= static_cast<int64_t>(p.shape.size())) return false;
  const int64_t size = p.shape[static_cast<size_t>(dim)];
  if (size > (p.dtype == RK_DTYPE_F32 ? int64_t{1} << 24 : int64_t{1} << 31)) return false;
  part.kind = Kind::kIota;
  part.iota_size = static_cast<size_t>(size);
  part.iota_run = count(std::vector<int64_t>(p.shape.begin() + dim + 1, p.shape.end()));
  return true;
}

// The same 32 bits read as another dtype: where only the parts read it, the operand's own place
// (no pass); a result is copied out.
FusedElementwise::Fit FusedElementwise::fit_bitcast(const plugin::Fusion& fusion, const plugin::FusedPart& p, Part& part) {
  const int value = part.value;
  if (!fusion.is_result(value) && access_[static_cast<size_t>(p.operands[0])].mode != Access::Mode::kPerRow) {
    const Access& operand = access_[static_cast<size_t>(p.operands[0])];
    access_[static_cast<size_t>(value)] = operand;
    access_[static_cast<size_t>(value)].same_as = operand.same_as >= 0 ? operand.same_as : static_cast<int>(p.operands[0]);
    return Fit::kNoPass;
  }
  part.kind = Kind::kUnary;
  part.op = static_cast<int>(Unary::kCopy);
  return Fit::kPart;
}

// Its rows are the output's trailing dims it drops; read from a full buffer or a slot.
bool FusedElementwise::fit_reduction(const plugin::Fusion& fusion, size_t first, const plugin::FusedPart& p, Part& part) {
  const std::vector<int64_t>& shape = fusion.parts()[first].shape;
  const Access& operand = access_[static_cast<size_t>(p.operands[0])];
  if (operand.mode != Access::Mode::kFull || operand.tile >= 0 || p.shape.size() >= shape.size() ||
      !std::equal(p.shape.begin(), p.shape.end(), shape.begin()))
    return false;
  const size_t row = count(std::vector<int64_t>(shape.begin() + static_cast<long>(p.shape.size()), shape.end()));
  if (row == 0 || (row_ != 1 && row_ != row)) return false;  // empty rows: alone
  // A row longer than a segment (a language model's logits over its vocabulary) is reduced a
  // segment at a time, its lane accumulator carried between them in the scratch.
  if (row > kSegment) {
    if (long_rows_ == kMaxLongRowReductions) return false;
    part.carried = long_rows_++;
  }
  row_ = row;
  part.kind = Kind::kReduceRows;
  part.op = *p.prim == Prim::kReduceMax ? 1 : 0;
  reduced_.push_back(part.value);
  return true;
}

bool FusedElementwise::take_slot(bool as_f32, int& slot) {
  if (num_slots_ == kMaxSlots || (as_f32 && f32_slots_ == kMaxF32Slots)) return false;
  f32_slots_ += as_f32 ? 1 : 0;
  slot = num_slots_++;
  return true;
}

// A bf16 or f16 part, or one the reference math computes: which of its lanes the reference math
// computes, from which operands.
bool FusedElementwise::fit_half(const plugin::Fusion& fusion, const plugin::FusedPart& p, Part& part) {
  part.dtype = p.dtype;
  if (!is_half(p.dtype) && part.kind != Kind::kReference) return true;
  if (p.operands.size() > part.lanes.operand_dtypes.size()) return false;
  part.check = is_half(p.dtype) ? half_check(*p.prim) : HalfCheck{};
  fit_lanes(fusion, p, part);
  const bool exact = part.check.kind == HalfCheck::Kind::kExact || part.check.kind == HalfCheck::Kind::kPicks;
  part.rounds_in_pass = is_half(p.dtype) && part.kind == Kind::kBinary && exact && part.lane_operands == part.operands;
  const bool moves = part.kind == Kind::kSelect || part.kind == Kind::kFill ||
                     (part.kind == Kind::kUnary && part.op == static_cast<int>(Unary::kCopy));
  part.moves_half = is_half(p.dtype) && part.check.kind == HalfCheck::Kind::kMove && moves &&
                    fusion.dtype(p.operands.back()) == p.dtype;
  return true;
}

void FusedElementwise::fit_lanes(const plugin::Fusion& fusion, const plugin::FusedPart& p, Part& part) {
  part.lanes.prim = *p.prim;
  part.lanes.integer = part.power;
  part.lanes.dtype = p.dtype;
  if (part.check.kind == HalfCheck::Kind::kMove && part.kind != Kind::kReference) return;  // reads no operand
  part.lanes.num_operands = p.operands.size();
  for (size_t k = 0; k < p.operands.size(); ++k) {
    part.lanes.operand_dtypes[k] = fusion.dtype(p.operands[k]);
    part.lane_operands.push_back(static_cast<int>(p.operands[k]));
  }
}

void FusedElementwise::pair_binaries() {
  // How many times the parts read value v (a bitcast's reads are its operand's).
  auto reads = [&](int v) {
    int n = 0;
    for (const Part& p : parts_)
      for (int o : p.operands) n += (access_[static_cast<size_t>(o)].same_as >= 0 ? access_[static_cast<size_t>(o)].same_as : o) == v;
    return n;
  };
  std::vector<Part> paired;
  for (size_t j = 0; j < parts_.size(); ++j) {
    const Part& p = parts_[j];
    // Not bf16 or f16 parts: each result is rounded, its operands at hand, before the next reads it.
    if (j + 1 < parts_.size() && p.kind == Kind::kBinary && parts_[j + 1].kind == Kind::kBinary &&
        p.dtype == RK_DTYPE_F32 && parts_[j + 1].dtype == RK_DTYPE_F32 && access_[static_cast<size_t>(p.value)].slot >= 0 &&
        reads(p.value) == 1) {
      const Part& q = parts_[j + 1];
      const size_t at = q.operands[0] == p.value ? 0 : 1;
      if (q.operands[at] == p.value) {
        Part both;
        both.kind = Kind::kBinary2;
        both.op = p.op;
        both.op2 = q.op;
        both.inner_left = at == 0;
        both.operands = {p.operands[0], p.operands[1], q.operands[1 - at]};
        both.value = q.value;
        both.dtype = q.dtype;
        paired.push_back(std::move(both));
        ++j;
        continue;
      }
    }
    paired.push_back(p);
  }
  parts_ = std::move(paired);
}

bool FusedElementwise::bits_eligible(int v, const Part& by) const {
  const Access& a = access_[static_cast<size_t>(v)];
  if (std::find(promoted_.begin(), promoted_.end(), v) == promoted_.end() || a.dtype != by.dtype || a.same_as >= 0 ||
      a.tile >= 0 || (a.mode != Access::Mode::kFull && a.mode != Access::Mode::kScalar))
    return false;
  for (const Part& p : parts_) {
    if (&p == &by) continue;
    const bool reads = std::find(p.operands.begin(), p.operands.end(), v) != p.operands.end() ||
                       std::find(p.lane_operands.begin(), p.lane_operands.end(), v) != p.lane_operands.end();
    if (reads) return false;
  }
  return true;
}

void FusedElementwise::pair_halves() {
  auto reads = [&](int v) {
    int n = 0;
    for (const Part& p : parts_) n += static_cast<int>(std::count(p.operands.begin(), p.operands.end(), v));
    return n;
  };
  // Only a whole input read as bits costs more promoted than the pass saves; a scalar is one element.
  auto reads_whole_bits = [&](const Part& p) {
    for (int v : p.operands)
      if (access_[static_cast<size_t>(v)].mode == Access::Mode::kFull && bits_eligible(v, p)) return true;
    return false;
  };
  auto pairs = [](int op) { return op == static_cast<int>(Binary::kAdd) || op == static_cast<int>(Binary::kSub) ||
                                   op == static_cast<int>(Binary::kMul); };
  for (size_t j = 0; j + 1 < parts_.size(); ++j) {
    Part& p = parts_[j];
    const Part& q = parts_[j + 1];
    const bool halves = p.rounds_in_pass && q.rounds_in_pass && p.dtype == q.dtype && pairs(p.op) && pairs(q.op);
    if (!halves || p.result || reads(p.value) != 1 || (q.operands[0] != p.value && q.operands[1] != p.value) ||
        reads_whole_bits(p) || reads_whole_bits(q))
      continue;
    p.heads_pair = true;
    ++j;
  }
}

void FusedElementwise::read_bits() {
  for (size_t j = 0; j < parts_.size(); ++j) {
    Part& p = parts_[j];
    if (!p.rounds_in_pass || p.heads_pair || (j > 0 && parts_[j - 1].heads_pair)) continue;
    for (size_t k = 0; k < 2; ++k) {
      p.bits_operands[k] = bits_eligible(p.operands[k], p);
      p.reads_bits = p.reads_bits || p.bits_operands[k];
    }
    for (size_t k = 0; k < 2; ++k)
      if (p.bits_operands[k]) promoted_.erase(std::remove(promoted_.begin(), promoted_.end(), p.operands[k]), promoted_.end());
  }
}

void FusedElementwise::drop_unread_f32() {
  for (Part& p : parts_) {
    if (!is_half(p.dtype)) continue;
    bool read = false;
    for (const Part& q : parts_)
      for (const std::vector<int>* list : {&q.operands, &q.lane_operands})
        for (int o : *list) {
          const Access& a = access_[static_cast<size_t>(o)];
          read = read || o == p.value || a.same_as == p.value;
        }
    p.keeps_f32 = read && !p.moves_half;  // a moved value is in its slot already
  }
}

void FusedElementwise::run(std::span<void* const> values, size_t begin, size_t end) const {
  Scratch scratch;
  for (size_t t = 0; t < tiled_.size(); ++t) {
    const size_t v = static_cast<size_t>(tiled_[t]), period = access_[v].period;
    const float* from = static_cast<const float*>(values[v]);
    size_t i = 0;
    if (is_half(access_[v].dtype)) {  // promoted once, then repeated from there
      half_loops().promote(access_[v].dtype == RK_DTYPE_F16, static_cast<const uint16_t*>(values[v]), scratch.tiles[t], period);
      from = scratch.tiles[t];
      i = period;
    }
    for (; i < kSegment + period; i += period) std::copy(from, from + period, scratch.tiles[t] + i);
  }
  // Whole rows; or, for rows longer than a segment, segments from each row's start, the last of a
  // row cut at its end (every other one a whole number of vectors, as reduce_row_piece needs).
  const bool long_rows = row_ > kSegment;
  const size_t segment = long_rows ? kSegment : kSegment / row_ * row_;
  while (begin < end) {
    size_t len = std::min(segment, end - begin);
    if (long_rows) len = std::min(len, row_ - begin % row_);
    for (size_t period : periods_) len = std::min(len, period - begin % period);  // stay inside one repeat
    run_segment(values, begin, len, scratch);
    begin += len;
  }
  if (!streamed_.empty()) stream_fence();
}

void FusedElementwise::promote(std::span<void* const> values, size_t begin, size_t len, Scratch& scratch) const {
  for (int v : spread_) {
    const Access& a = access_[static_cast<size_t>(v)];
    spread(a, values[static_cast<size_t>(v)], begin, len, scratch.slots[a.slot], scratch);
  }
  for (int v : promoted_) promote_value(v, values, begin, len, scratch);
}

void FusedElementwise::promote_value(int v, std::span<void* const> values, size_t begin, size_t len, Scratch& scratch) const {
  const Access& a = access_[static_cast<size_t>(v)];
  const uint16_t* from = static_cast<const uint16_t*>(values[static_cast<size_t>(v)]);
  const size_t at = a.mode == Access::Mode::kScalar ? 0 : a.mode == Access::Mode::kRepeat ? begin % a.period : begin;
  half_loops().promote(a.dtype == RK_DTYPE_F16, from + at, scratch.slots[a.slot], a.mode == Access::Mode::kScalar ? 1 : len);
}

void FusedElementwise::spread(const Access& a, const void* from, size_t begin, size_t len, float* y, Scratch& scratch) const {
  if (!is_half(a.dtype)) return loops().spread_rows(static_cast<const float*>(from), a.period, begin, len, y);
  const size_t first = begin / a.period, rows = (begin + len - 1) / a.period + 1 - first;  // at most len + 1
  half_loops().promote(a.dtype == RK_DTYPE_F16, static_cast<const uint16_t*>(from) + first, scratch.rows, rows);
  loops().spread_rows(scratch.rows, a.period, begin - first * a.period, len, y);
}

void FusedElementwise::finish(const Part& p, std::span<void* const> values, const LaneOperand* operands, void* y, size_t begin,
                              size_t len, Scratch& scratch) const {
  float* rounded = static_cast<float*>(y);
  void* result = values[static_cast<size_t>(p.value)];  // a result's bf16 or f16 bits go there too
  uint16_t* bits = is_half(p.dtype) && result ? static_cast<uint16_t*>(result) + begin : nullptr;
  size_t flagged = len;
  if (p.kind == Kind::kReference) {
    for (size_t i = 0; i < len; ++i) scratch.flagged[i] = static_cast<uint32_t>(i);
  } else if (p.reads_bits) {
    std::array<HalfOperand, 2> x{};
    for (size_t k = 0; k < 2; ++k) {
      const int v = p.operands[k];
      x[k].scalar = operands[k].scalar;
      x[k].data = operands[k].data;
      if (p.bits_operands[k])
        x[k].bits = static_cast<const uint16_t*>(values[static_cast<size_t>(v)]) + (x[k].scalar ? 0 : begin);
    }
    flagged = half_loops().binary_round_bits(p.dtype == RK_DTYPE_F16, p.op, x.data(), rounded, p.keeps_f32, bits, len,
                                             scratch.flagged);
    // The recomputed lanes read the operands promoted, as the other parts do.
    if (flagged > 0)
      for (size_t k = 0; k < 2; ++k)
        if (p.bits_operands[k]) promote_value(p.operands[k], values, begin, len, scratch);
  } else {
    const bool f16 = p.dtype == RK_DTYPE_F16;
    flagged = p.rounds_in_pass
                  ? half_loops().binary_round(f16, p.op, p.check, operands, rounded, p.keeps_f32, bits, len, scratch.flagged)
                  : half_loops().round(f16, p.check, operands, p.lane_operands.size(), rounded, p.keeps_f32, bits, len,
                                       scratch.flagged);
  }
  p.lanes.recompute(operands, scratch.flagged, flagged, rounded, bits);
}

void* FusedElementwise::at(int v, bool& scalar, std::span<void* const> values, size_t begin, Scratch& scratch) const {
  const Access& a = access_[static_cast<size_t>(v)];
  if (a.same_as >= 0) v = a.same_as;
  scalar = a.mode == Access::Mode::kScalar;
  if (a.slot >= 0) return scratch.slots[a.slot];
  if (a.staged >= 0) return scratch.staged[a.staged];
  if (a.tile >= 0) return scratch.tiles[a.tile] + begin % a.period;
  const size_t bytes = a.is_bool ? 1 : sizeof(float);
  std::byte* base = static_cast<std::byte*>(values[static_cast<size_t>(v)]);
  switch (a.mode) {
    case Access::Mode::kFull: return base + begin * bytes;
    case Access::Mode::kScalar: return base;
    case Access::Mode::kRepeat: return base + (begin % a.period) * bytes;
    case Access::Mode::kPerRow: return base;  // the fill reads it (run_part)
  }
  return base;
}

void FusedElementwise::run_segment(std::span<void* const> values, size_t begin, size_t len, Scratch& scratch) const {
  promote(values, begin, len, scratch);
  for (size_t j = 0; j < parts_.size(); ++j) {
    if (parts_[j].heads_pair && run_pair(parts_[j], parts_[j + 1], values, begin, len, scratch)) {
      ++j;
      continue;
    }
    run_part(parts_[j], values, begin, len, scratch);
  }
  for (size_t k = 0; k < streamed_.size(); ++k)
    if (void* out = values[static_cast<size_t>(streamed_[k])])
      stream32(reinterpret_cast<const uint32_t*>(scratch.staged[k]), static_cast<uint32_t*>(out) + begin, len);
}

bool FusedElementwise::run_pair(const Part& p, const Part& q, std::span<void* const> values, size_t begin, size_t len,
                                Scratch& scratch) const {
  const bool inner_left = q.operands[0] == p.value;
  const std::array<int, 3> from{p.operands[0], p.operands[1], q.operands[inner_left ? 1 : 0]};
  std::array<LaneOperand, 3> x{};
  for (size_t k = 0; k < 3; ++k) x[k].data = static_cast<const float*>(at(from[k], x[k].scalar, values, begin, scratch));
  bool unused = false;
  float* y = static_cast<float*>(at(q.value, unused, values, begin, scratch));
  void* result = values[static_cast<size_t>(q.value)];
  uint16_t* bits = result ? static_cast<uint16_t*>(result) + begin : nullptr;
  return half_loops().binary2_round(q.dtype == RK_DTYPE_F16, p.op, q.op, inner_left, x.data(), y, q.keeps_f32, bits, len);
}

void FusedElementwise::iota(const Part& p, size_t begin, size_t len, void* y) {
  size_t value = begin / p.iota_run % p.iota_size, left = p.iota_run - begin % p.iota_run;  // in this run
  const bool is_int = p.dtype == RK_DTYPE_I32;
  if (p.iota_run == 1) {  // counting along the last dim: a loop over each count up to its restart
    for (size_t i = 0; i < len;) {
      const size_t n = std::min(p.iota_size - value, len - i);
      count_up(!is_int, value, static_cast<uint32_t*>(y) + i, n);
      i += n;
      value = 0;
    }
    return;
  }
  for (size_t i = 0; i < len;) {
    const size_t n = std::min(left, len - i);
    fill32(is_int ? static_cast<uint32_t>(value) : std::bit_cast<uint32_t>(static_cast<float>(value)),
           static_cast<uint32_t*>(y) + i, n);
    i += n;
    left = p.iota_run;
    if (++value == p.iota_size) value = 0;
  }
}

void FusedElementwise::run_part(const Part& p, std::span<void* const> values, size_t begin, size_t len, Scratch& scratch) const {
  const Loops& run = loops();  // the dispatched loops, called straight: a segment is short
  auto at = [&](int v, bool& scalar) { return this->at(v, scalar, values, begin, scratch); };
  bool s0 = false, s1 = false, s2 = false, unused = false;
  void* y = p.kind == Kind::kReduceRows ? nullptr : at(p.value, unused);  // a reduction writes by rows (below)
  void* x0 = p.operands.empty() ? nullptr : at(p.operands[0], s0);
  void* x1 = p.operands.size() > 1 ? at(p.operands[1], s1) : nullptr;
  void* x2 = p.operands.size() > 2 ? at(p.operands[2], s2) : nullptr;
  auto f = [](void* v) { return static_cast<float*>(v); };
  switch (p.kind) {
    case Kind::kUnary: run.unary(p.op, f(x0), f(y), len); break;
    case Kind::kPow:  // bf16 and f16 in double, as the reference, unless the f32 products are exact
      if (is_half(p.dtype) && !exact_in_f32(p.dtype, p.power)) half_loops().integer_pow_f64(p.power, f(x0), f(y), len);
      else run.integer_pow(p.power, f(x0), f(y), len);
      break;
    case Kind::kBinary:  // a part that rounds in its pass is computed there (finish)
      if (!p.rounds_in_pass) run.binary(p.op, f(x0), s0, f(x1), s1, f(y), len);
      break;
    case Kind::kBinary2: run.binary2(p.op, p.op2, p.inner_left, f(x0), s0, f(x1), s1, f(x2), s2, f(y), len); break;
    case Kind::kCompare: run.compare(p.op, f(x0), s0, f(x1), s1, static_cast<uint8_t*>(y), len); break;
    case Kind::kCompareInt:
      compare_ints(static_cast<Compare>(p.op), p.op2 == 1, x0, s0, x1, s1, static_cast<uint8_t*>(y), len);
      break;
    case Kind::kIota: iota(p, begin, len, y); break;
    case Kind::kRandomBits: random_bits_piece(static_cast<const uint32_t*>(x0), begin, len, static_cast<uint32_t*>(y)); break;
    case Kind::kBitwise: {
      auto u = [](void* v) { return static_cast<uint32_t*>(v); };
      bitwise(static_cast<Bitwise>(p.op), u(x0), s0, u(x1), s1, u(y), len);
      break;
    }
    case Kind::kReduceRows: {
      float* rows = static_cast<float*>(values[static_cast<size_t>(p.value)]) + begin / row_;
      if (p.carried < 0) {
        run.reduce_rows(p.op == 1, f(x0), rows, len / row_, row_);
        break;
      }
      const size_t at = begin % row_;
      run.reduce_row_piece(p.op == 1, f(x0), len, at == 0, at + len == row_, scratch.carried[p.carried], rows);
      break;
    }
    case Kind::kSelect: run.select(static_cast<const uint8_t*>(x0), s0, f(x1), f(x2), f(y), len); break;
    case Kind::kFill: {
      const Access& a = access_[static_cast<size_t>(p.operands[0])];
      if (a.mode != Access::Mode::kPerRow) {
        fill32(std::bit_cast<uint32_t>(f(x0)[0]), static_cast<uint32_t*>(y), len);
        break;
      }
      spread(a, x0, begin, len, f(y), scratch);
      break;
    }
    case Kind::kReference: break;  // every lane below
    case Kind::kConvert: {
      const Conversion c = static_cast<Conversion>(p.op);
      if (c == Conversion::kToBool || c == Conversion::kToI32) {
        convert(c, x0, s0, y, len);
        break;
      }
      if (p.dtype == RK_DTYPE_F32) {
        convert_to_f32(c == Conversion::kFromBool, x0, s0, f(y), len);
        break;
      }
      // Into bf16 or f16: converted and rounded in one pass, no lane recomputed (a moved value).
      void* result = values[static_cast<size_t>(p.value)];
      uint16_t* bits = result ? static_cast<uint16_t*>(result) + begin : nullptr;
      half_loops().convert_round(p.dtype == RK_DTYPE_F16, c == Conversion::kFromBool, x0, s0, f(y), bits, len);
      return;
    }
  }
  if (!is_half(p.dtype) && p.kind != Kind::kReference) return;
  if (p.moves_half && !values[static_cast<size_t>(p.value)]) return;  // no bits to store, nothing to round
  std::array<LaneOperand, 3> operands{};
  for (size_t k = 0; k < p.lane_operands.size(); ++k) {
    bool scalar = false;
    operands[k].data = f(at(p.lane_operands[k], scalar));
    operands[k].scalar = scalar;
  }
  finish(p, values, operands.data(), y, begin, len, scratch);
}

}  // namespace rematkit::hwy_backend
