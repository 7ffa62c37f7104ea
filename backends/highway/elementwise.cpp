// Elementwise kernels, compiled for every Highway target (foreach_target.h) and dispatched once per
// call. Transcendentals use hwy/contrib/math (exp 1 ulp, log 4, sin and cos 3); tanh and erf are
// XLA:CPU's rational approximations.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <utility>

#include "highway/binary_op-inl.h"
#include "highway/compare_loop-inl.h"
#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// XLA:CPU's f32 erf (its ErfImpl32): x P(x^2) / Q(x^2) on x clamped to +-3.8325069, where erf
// is 1 in f32; the polynomials by Horner from zero with fused multiply-adds, as XLA evaluates them.
template <class D, class V>
HWY_INLINE V Erf(D d, V x) {
  const V clamp = hn::Set(d, 3.832506856900711f);
  const V xc = hn::Min(hn::Max(x, hn::Neg(clamp)), clamp);
  const V x2 = hn::Mul(xc, xc);
  V p = hn::Zero(d), q = hn::Zero(d);
  for (float c : {0.00022905065861350646f, 0.0034082910107109506f, 0.050955695062380861f, 0.18520832239976145f,
                  1.128379143519084f})
    p = hn::MulAdd(p, x2, hn::Set(d, c));
  for (float c : {-1.1791602954361697e-7f, 2.3547966471313185e-5f, 0.0010179625278914885f, 0.014070470171167667f,
                  0.11098505178285362f, 0.49746925110067538f, 1.0f})
    q = hn::MulAdd(q, x2, hn::Set(d, c));
  const V saturated = hn::CopySign(hn::Set(d, 1.0f), x);
  return hn::IfThenElse(hn::Ge(hn::Abs(x), clamp), saturated, hn::Div(hn::Mul(xc, p), q));
}

// XLA:CPU's f32 tanh (EmitFastTanh, xla/service/llvm_ir/math_ops.cc): x P(x^2) / Q(x^2) on x
// clamped to +-9, and x itself where |x| < 0.0004 (P(0) / Q(0) is 1 to within an ulp there). A
// division and a dozen multiply-adds: hwy::Tanh's expm1 and its branches ran behind oneDNN's tanh
// (docs/performance.md, "Measurements behind choices in the code"), and a chain holding a tanh
// could not fuse on Highway (the fusion rule's bits follow each part's own backend).
template <class D, class V>
HWY_INLINE V XlaTanh(D d, V x) {
  const V xc = hn::Min(hn::Max(x, hn::Set(d, -9.0f)), hn::Set(d, 9.0f));
  const V x2 = hn::Mul(xc, xc);
  V p = hn::Zero(d), q = hn::Zero(d);
  for (float c : {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f, 5.12229709037114e-08f,
                  1.48572235717979e-05f, 6.37261928875436e-04f, 4.89352455891786e-03f})
    p = hn::MulAdd(p, x2, hn::Set(d, c));
  for (float c : {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f, 4.89352518554385e-03f})
    q = hn::MulAdd(q, x2, hn::Set(d, c));
  return hn::IfThenElse(hn::Lt(hn::Abs(x), hn::Set(d, 0.0004f)), x, hn::Div(hn::Mul(xc, p), q));
}

template <Unary op, class D, class V>
HWY_INLINE V apply(D d, V x) {
  if constexpr (op == Unary::kNeg) return hn::Neg(x);
  if constexpr (op == Unary::kExp) return hn::Exp(d, x);
  if constexpr (op == Unary::kLog) return hn::Log(d, x);
  if constexpr (op == Unary::kSin) return hn::Sin(d, x);
  if constexpr (op == Unary::kCos) return hn::Cos(d, x);
  if constexpr (op == Unary::kTanh) return XlaTanh(d, x);
  if constexpr (op == Unary::kLogistic) return hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), hn::Exp(d, hn::Neg(x))));
  if constexpr (op == Unary::kSqrt) return hn::Sqrt(x);
  if constexpr (op == Unary::kRsqrt) return hn::Div(hn::Set(d, 1.0f), hn::Sqrt(x));
  if constexpr (op == Unary::kSquare) return hn::Mul(x, x);
  if constexpr (op == Unary::kRelu) return hn::IfThenElse(hn::Gt(x, hn::Zero(d)), x, hn::Zero(d));
  if constexpr (op == Unary::kErf) return Erf(d, x);
  return x;
}

template <Unary op>
void unary_loop(const float* x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(apply<op>(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {  // the tail through a padded buffer (Highway 1.0 has no LoadN/StoreN)
    HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    hn::Store(apply<op>(d, hn::Load(d, buf)), d, buf);
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

template <Binary op>
void binary_loop(const float* a, bool a_scalar, const float* b, bool b_scalar, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto load = [&](const float* p, bool scalar, size_t i) { return scalar ? hn::Set(d, p[0]) : hn::LoadU(d, p + i); };
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(ApplyBinary<op>(load(a, a_scalar, i), load(b, b_scalar, i)), d, y + i);
  if (i < n) {
    HWY_ALIGN float ba[hn::MaxLanes(d)] = {}, bb[hn::MaxLanes(d)] = {};
    for (size_t j = i; j < n; ++j) ba[j - i] = a[a_scalar ? 0 : j], bb[j - i] = b[b_scalar ? 0 : j];
    hn::Store(ApplyBinary<op>(hn::Load(d, ba), hn::Load(d, bb)), d, ba);
    std::memcpy(y + i, ba, (n - i) * sizeof(float));
  }
}

void UnaryImpl(int op, const float* x, float* y, size_t n) {
  switch (static_cast<Unary>(op)) {
    case Unary::kNeg: return unary_loop<Unary::kNeg>(x, y, n);
    case Unary::kExp: return unary_loop<Unary::kExp>(x, y, n);
    case Unary::kLog: return unary_loop<Unary::kLog>(x, y, n);
    case Unary::kSin: return unary_loop<Unary::kSin>(x, y, n);
    case Unary::kCos: return unary_loop<Unary::kCos>(x, y, n);
    case Unary::kTanh: return unary_loop<Unary::kTanh>(x, y, n);
    case Unary::kLogistic: return unary_loop<Unary::kLogistic>(x, y, n);
    case Unary::kSqrt: return unary_loop<Unary::kSqrt>(x, y, n);
    case Unary::kRsqrt: return unary_loop<Unary::kRsqrt>(x, y, n);
    case Unary::kSquare: return unary_loop<Unary::kSquare>(x, y, n);
    case Unary::kRelu: return unary_loop<Unary::kRelu>(x, y, n);
    case Unary::kCopy: return unary_loop<Unary::kCopy>(x, y, n);
    case Unary::kErf: return unary_loop<Unary::kErf>(x, y, n);
  }
}

void BinaryImpl(int op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* y, size_t n) {
  switch (static_cast<Binary>(op)) {
    case Binary::kAdd: return binary_loop<Binary::kAdd>(a, a_scalar, b, b_scalar, y, n);
    case Binary::kSub: return binary_loop<Binary::kSub>(a, a_scalar, b, b_scalar, y, n);
    case Binary::kMul: return binary_loop<Binary::kMul>(a, a_scalar, b, b_scalar, y, n);
    case Binary::kDiv: return binary_loop<Binary::kDiv>(a, a_scalar, b, b_scalar, y, n);
    case Binary::kMax: return binary_loop<Binary::kMax>(a, a_scalar, b, b_scalar, y, n);
    case Binary::kMin: return binary_loop<Binary::kMin>(a, a_scalar, b, b_scalar, y, n);
  }
}

// y = op2(op1(a, b), c), or op2(c, op1(a, b)) when the inner result is op2's right operand: two
// binary parts of a fused chain in one pass, the value between them in a register. The same two
// IEEE operations in the same order, so the same bits as two passes: this file is compiled with
// -ffp-contract=off (backends/CMakeLists.txt), or GCC would fuse a mul and an add into one rounding.
template <Binary op1, Binary op2, bool inner_left>
void binary2_loop(const float* a, bool as, const float* b, bool bs, const float* c, bool cs, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto load = [&](const float* p, bool scalar, size_t i) { return scalar ? hn::Set(d, p[0]) : hn::LoadU(d, p + i); };
  auto both = [&](auto va, auto vb, auto vc) {
    const auto inner = ApplyBinary<op1>(va, vb);
    return inner_left ? ApplyBinary<op2>(inner, vc) : ApplyBinary<op2>(vc, inner);
  };
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(both(load(a, as, i), load(b, bs, i), load(c, cs, i)), d, y + i);
  if (i < n) {
    HWY_ALIGN float ba[hn::MaxLanes(d)] = {}, bb[hn::MaxLanes(d)] = {}, bc[hn::MaxLanes(d)] = {};
    for (size_t j = i; j < n; ++j) ba[j - i] = a[as ? 0 : j], bb[j - i] = b[bs ? 0 : j], bc[j - i] = c[cs ? 0 : j];
    hn::Store(both(hn::Load(d, ba), hn::Load(d, bb), hn::Load(d, bc)), d, ba);
    std::memcpy(y + i, ba, (n - i) * sizeof(float));
  }
}

using Binary2Loop = void (*)(const float*, bool, const float*, bool, const float*, bool, float*, size_t);
constexpr size_t kBinaries = 6;  // Binary's values
template <size_t... I>
constexpr std::array<Binary2Loop, sizeof...(I)> binary2_table(std::index_sequence<I...>) {
  return {&binary2_loop<static_cast<Binary>(I / (2 * kBinaries)), static_cast<Binary>(I / 2 % kBinaries), I % 2 == 0>...};
}

void Binary2Impl(int op1, int op2, bool inner_left, const float* a, bool as, const float* b, bool bs, const float* c,
                 bool cs, float* y, size_t n) {
  static constexpr auto kTable = binary2_table(std::make_index_sequence<2 * kBinaries * kBinaries>());
  kTable[(static_cast<size_t>(op1) * kBinaries + static_cast<size_t>(op2)) * 2 + (inner_left ? 0 : 1)](a, as, b, bs, c, cs, y, n);
}

void IntegerPowImpl(int64_t power, const float* x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const int64_t m = power < 0 ? -power : power;
  auto pow = [&](auto v) {
    auto r = hn::Set(d, 1.0f);
    for (int64_t i = 0; i < m; ++i) r = hn::Mul(r, v);
    return power < 0 ? hn::Div(hn::Set(d, 1.0f), r) : r;
  };
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(pow(hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    hn::Store(pow(hn::Load(d, buf)), d, buf);
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

void CompareImpl(int op, const float* a, bool a_scalar, const float* b, bool b_scalar, uint8_t* y, size_t n) {
  CompareAny(op, a, a_scalar, b, b_scalar, y, n);
}

void SelectImpl(const uint8_t* pred, bool pred_scalar, const float* on_false, const float* on_true, float* y, size_t n) {
  if (pred_scalar) {
    std::memcpy(y, pred[0] ? on_true : on_false, n * sizeof(float));
    return;
  }
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> du8;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto chosen = hn::RebindMask(d, hn::Ne(hn::PromoteTo(di, hn::LoadU(du8, pred + i)), hn::Zero(di)));
    hn::StoreU(hn::IfThenElse(chosen, hn::LoadU(d, on_true + i), hn::LoadU(d, on_false + i)), d, y + i);
  }
  for (; i < n; ++i) y[i] = pred[i] ? on_true[i] : on_false[i];
}

// The largest lane, -inf included. Not Highway's MaxOfLanes: on EMU128 (the portable target clang
// builds) Highway 1.0.3 starts it from the lowest finite float, so lanes of -inf (a max over no
// elements) gave -FLT_MAX instead of -inf.
template <class D, class V>
float MaxOfLanesWithInfinity(D d, V v) {
  HWY_ALIGN float lane[hn::MaxLanes(d)];
  hn::Store(v, d, lane);
  float max = lane[0];
  for (size_t k = 1; k < hn::Lanes(d); ++k) max = std::max(max, lane[k]);
  return max;
}

// y[j] = sum (or max) over r of x[r * len + j], for the columns j in [begin, end), the rows added
// in order: a column's result does not depend on how the columns are split between threads. Four
// vectors of columns at a time stay in registers while the rows stream past (a bias's 16 columns
// over 2048 rows would otherwise wait on a store and a load per row).
void ReduceLeadingImpl(bool is_max, const float* x, float* y, size_t rows, size_t len, size_t begin, size_t end) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const float init = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
  const auto combine = [is_max](auto acc, auto v) { return is_max ? hn::Max(acc, v) : hn::Add(acc, v); };
  size_t j = begin;
  for (; j + 4 * lanes <= end; j += 4 * lanes) {
    auto a0 = hn::Set(d, init), a1 = a0, a2 = a0, a3 = a0;
    for (size_t r = 0; r < rows; ++r) {
      const float* row = x + r * len + j;
      a0 = combine(a0, hn::LoadU(d, row));
      a1 = combine(a1, hn::LoadU(d, row + lanes));
      a2 = combine(a2, hn::LoadU(d, row + 2 * lanes));
      a3 = combine(a3, hn::LoadU(d, row + 3 * lanes));
    }
    hn::StoreU(a0, d, y + j);
    hn::StoreU(a1, d, y + j + lanes);
    hn::StoreU(a2, d, y + j + 2 * lanes);
    hn::StoreU(a3, d, y + j + 3 * lanes);
  }
  for (; j + lanes <= end; j += lanes) {
    auto acc = hn::Set(d, init);
    for (size_t r = 0; r < rows; ++r) acc = combine(acc, hn::LoadU(d, x + r * len + j));
    hn::StoreU(acc, d, y + j);
  }
  for (; j < end; ++j) {
    float acc = init;
    for (size_t r = 0; r < rows; ++r) acc = is_max ? std::max(acc, x[r * len + j]) : acc + x[r * len + j];
    y[j] = acc;
  }
}

void ReduceRowsImpl(bool is_max, const float* x, float* y, size_t rows, size_t len) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const float init = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
  for (size_t r = 0; r < rows; ++r) {
    const float* row = x + r * len;
    auto acc = hn::Set(d, init);
    size_t i = 0;
    for (; i + lanes <= len; i += lanes) acc = is_max ? hn::Max(acc, hn::LoadU(d, row + i)) : hn::Add(acc, hn::LoadU(d, row + i));
    float result = is_max ? MaxOfLanesWithInfinity(d, acc) : hn::GetLane(hn::SumOfLanes(d, acc));
    for (; i < len; ++i) result = is_max ? std::max(result, row[i]) : result + row[i];
    y[r] = result;
  }
}

// One piece of a row too long for a fused segment, summed (or maxed) as ReduceRowsImpl sums the row
// alone: the same lane accumulator carried from piece to piece in `carried` (every piece but the
// row's last a whole number of vectors), then, at the last, the lanes and the tail as there.
void ReduceRowPieceImpl(bool is_max, const float* x, size_t len, bool first, bool last, float* carried, float* y) {
  static_assert(HWY_MAX_BYTES / sizeof(float) <= kMaxLaneFloats, "`carried` holds a vector");
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto acc = first ? hn::Set(d, is_max ? -std::numeric_limits<float>::infinity() : 0.0f) : hn::Load(d, carried);
  size_t i = 0;
  for (; i + lanes <= len; i += lanes) acc = is_max ? hn::Max(acc, hn::LoadU(d, x + i)) : hn::Add(acc, hn::LoadU(d, x + i));
  if (!last) return hn::Store(acc, d, carried);
  float result = is_max ? MaxOfLanesWithInfinity(d, acc) : hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < len; ++i) result = is_max ? std::max(result, x[i]) : result + x[i];
  *y = result;
}

// jax.nn.softmax along each row of `len` elements: exp(x - max) / sum(exp(x - max)), the
// exponentials with Highway's Exp (1 ulp), the sum in f32 lanes.
void SoftmaxRowsImpl(const float* x, float* y, size_t rows, size_t len) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  HWY_ALIGN float buf[hn::MaxLanes(d)];
  for (size_t r = 0; r < rows; ++r) {
    const float* in = x + r * len;
    float* out = y + r * len;
    float max = -std::numeric_limits<float>::infinity();
    size_t i = 0;
    if (len >= lanes) {
      auto m = hn::LoadU(d, in);
      for (i = lanes; i + lanes <= len; i += lanes) m = hn::Max(m, hn::LoadU(d, in + i));
      max = MaxOfLanesWithInfinity(d, m);
    }
    for (; i < len; ++i) max = std::max(max, in[i]);
    const auto vmax = hn::Set(d, max);
    auto sums = hn::Zero(d);
    float sum = 0.0f;
    for (i = 0; i + lanes <= len; i += lanes) {
      const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, in + i), vmax));
      hn::StoreU(e, d, out + i);
      sums = hn::Add(sums, e);
    }
    if (i < len) {  // the tail through a padded buffer, padded with -inf so that exp gives 0
      for (size_t j = 0; j < lanes; ++j) buf[j] = i + j < len ? in[i + j] : -std::numeric_limits<float>::infinity();
      const auto e = hn::Exp(d, hn::Sub(hn::Load(d, buf), vmax));
      hn::Store(e, d, buf);
      std::memcpy(out + i, buf, (len - i) * sizeof(float));
      sums = hn::Add(sums, e);
    }
    sum = hn::GetLane(hn::SumOfLanes(d, sums));
    const auto vsum = hn::Set(d, sum);
    for (i = 0; i + lanes <= len; i += lanes) hn::StoreU(hn::Div(hn::LoadU(d, out + i), vsum), d, out + i);
    for (; i < len; ++i) out[i] /= sum;
  }
}

// y[i] = from[(begin + i) / period] for i < len: values per row spread over their rows' elements,
// each row's run in whole vectors (a fused segment's rows of 32-64 floats: a call per row cost
// more than the stores).
void SpreadRowsImpl(const float* from, size_t period, size_t begin, size_t len, float* y) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  for (size_t i = 0; i < len;) {
    const size_t row = (begin + i) / period, end = std::min(len, (row + 1) * period - begin);
    const auto v = hn::Set(d, from[row]);
    for (; i + lanes <= end; i += lanes) hn::StoreU(v, d, y + i);
    for (; i < end; ++i) y[i] = from[row];
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace rematkit::hwy_backend {

HWY_EXPORT(UnaryImpl);
HWY_EXPORT(BinaryImpl);
HWY_EXPORT(TargetName);
HWY_EXPORT(ReduceRowsImpl);
HWY_EXPORT(ReduceRowPieceImpl);
HWY_EXPORT(ReduceLeadingImpl);
HWY_EXPORT(SoftmaxRowsImpl);
HWY_EXPORT(IntegerPowImpl);
HWY_EXPORT(CompareImpl);
HWY_EXPORT(SelectImpl);
HWY_EXPORT(SpreadRowsImpl);
HWY_EXPORT(Binary2Impl);

namespace {

// Large arrays are split into chunks on oneTBB; a multiple of every vector width, so only the
// last chunk has a tail. Below the threshold a second thread costs more than it saves.
constexpr size_t kChunk = size_t{1} << 15;
constexpr size_t kParallelFrom = size_t{1} << 17;

template <typename Body>
void over_chunks(size_t n, Body body) {
  if (n < kParallelFrom) return body(size_t{0}, n);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, (n + kChunk - 1) / kChunk), [&](const tbb::blocked_range<size_t>& r) {
    body(r.begin() * kChunk, std::min(n, r.end() * kChunk));
  });
}

// over_chunks for a kernel with an f32 output y: body(begin, end, out) computes elements
// [begin, end) into out. A large output (kStreamFromBytes) is computed a block at a time into a
// buffer in L1 and streamed to y from there.
template <typename Body>
void over_chunks_into(size_t n, float* y, Body body) {
  if (n * sizeof(float) < kStreamFromBytes) return over_chunks(n, [&](size_t begin, size_t end) { body(begin, end, y + begin); });
  constexpr size_t kBlock = 1024;  // a multiple of every vector width, as kChunk is
  over_chunks(n, [&](size_t begin, size_t end) {
    alignas(64) float block[kBlock];
    for (size_t b = begin; b < end; b += kBlock) {
      const size_t e = std::min(end, b + kBlock);
      body(b, e, block);
      stream32(reinterpret_cast<const uint32_t*>(block), reinterpret_cast<uint32_t*>(y + b), e - b);
    }
    stream_fence();
  });
}

}  // namespace

void unary(Unary op, const float* x, float* y, size_t n) {
  (void)HWY_DYNAMIC_DISPATCH(TargetName)();  // chooses the target before the table is read below
  auto* fn = &HWY_DYNAMIC_DISPATCH(UnaryImpl);
  over_chunks_into(n, y, [&](size_t begin, size_t end, float* out) { fn(static_cast<int>(op), x + begin, out, end - begin); });
}
void binary(Binary op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* y, size_t n) {
  (void)HWY_DYNAMIC_DISPATCH(TargetName)();
  auto* fn = &HWY_DYNAMIC_DISPATCH(BinaryImpl);
  over_chunks_into(n, y, [&](size_t begin, size_t end, float* out) {
    fn(static_cast<int>(op), a_scalar ? a : a + begin, a_scalar, b_scalar ? b : b + begin, b_scalar, out, end - begin);
  });
}
const Loops& loops() {
  static const Loops chosen = [] {
    (void)HWY_DYNAMIC_DISPATCH(TargetName)();  // chooses the target before the tables are read
    return Loops{&HWY_DYNAMIC_DISPATCH(UnaryImpl), &HWY_DYNAMIC_DISPATCH(IntegerPowImpl), &HWY_DYNAMIC_DISPATCH(BinaryImpl),
                 &HWY_DYNAMIC_DISPATCH(CompareImpl), &HWY_DYNAMIC_DISPATCH(SelectImpl),
                 &HWY_DYNAMIC_DISPATCH(ReduceRowsImpl), &HWY_DYNAMIC_DISPATCH(ReduceRowPieceImpl),
                 &HWY_DYNAMIC_DISPATCH(SpreadRowsImpl), &HWY_DYNAMIC_DISPATCH(Binary2Impl)};
  }();
  return chosen;
}
void integer_pow(int64_t power, const float* x, float* y, size_t n) {
  (void)HWY_DYNAMIC_DISPATCH(TargetName)();
  auto* fn = &HWY_DYNAMIC_DISPATCH(IntegerPowImpl);
  over_chunks_into(n, y, [&](size_t begin, size_t end, float* out) { fn(power, x + begin, out, end - begin); });
}
void compare(Compare op, const float* a, bool a_scalar, const float* b, bool b_scalar, uint8_t* y, size_t n) {
  (void)HWY_DYNAMIC_DISPATCH(TargetName)();
  auto* fn = &HWY_DYNAMIC_DISPATCH(CompareImpl);
  over_chunks(n, [&](size_t begin, size_t end) {
    fn(static_cast<int>(op), a_scalar ? a : a + begin, a_scalar, b_scalar ? b : b + begin, b_scalar, y + begin, end - begin);
  });
}
void select(const uint8_t* pred, bool pred_scalar, const float* on_false, const float* on_true, float* y, size_t n) {
  (void)HWY_DYNAMIC_DISPATCH(TargetName)();
  auto* fn = &HWY_DYNAMIC_DISPATCH(SelectImpl);
  over_chunks_into(n, y, [&](size_t begin, size_t end, float* out) {
    fn(pred_scalar ? pred : pred + begin, pred_scalar, on_false + begin, on_true + begin, out, end - begin);
  });
}
void reduce_rows(bool is_max, const float* x, float* y, size_t rows, size_t len) {
  (void)HWY_DYNAMIC_DISPATCH(TargetName)();
  auto* fn = &HWY_DYNAMIC_DISPATCH(ReduceRowsImpl);
  if (rows * len < kParallelFrom || rows < 2) return fn(is_max, x, y, rows, len);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, rows), [&](const tbb::blocked_range<size_t>& r) {
    fn(is_max, x + r.begin() * len, y + r.begin(), r.end() - r.begin(), len);
  });
}

void reduce_leading(bool is_max, const float* x, float* y, size_t rows, size_t len) {
  (void)HWY_DYNAMIC_DISPATCH(TargetName)();
  auto* fn = &HWY_DYNAMIC_DISPATCH(ReduceLeadingImpl);
  constexpr size_t kColumns = 1024;  // a 4 KiB block of y: in L1, and a multiple of every vector width
  if (rows * len < kParallelFrom || len <= kColumns) return fn(is_max, x, y, rows, len, 0, len);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, (len + kColumns - 1) / kColumns), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b) fn(is_max, x, y, rows, len, b * kColumns, std::min(len, (b + 1) * kColumns));
  });
}

void softmax_rows(const float* x, float* y, size_t rows, size_t len) {
  (void)HWY_DYNAMIC_DISPATCH(TargetName)();
  auto* fn = &HWY_DYNAMIC_DISPATCH(SoftmaxRowsImpl);
  if (rows * len < kParallelFrom || rows < 2) return fn(x, y, rows, len);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, rows), [&](const tbb::blocked_range<size_t>& r) {
    fn(x + r.begin() * len, y + r.begin() * len, r.end() - r.begin(), len);
  });
}

const char* chosen_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

}  // namespace rematkit::hwy_backend
#endif
