// Highway's bf16 and f16 elementwise kernels (backends/highway/half_precision.hpp) give the
// reference backend's bits: each op prepared on both backends runs on the same buffers, over every
// bf16 and f16 operand for the unary ops, and over specials (NaNs, infinities, -0, subnormals,
// values next to rounding boundaries, the largest and smallest magnitudes) and thousands of random
// operands for the others; and fused bf16 chains give the bits the reference backend gives alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/fused_runs.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

using Bytes = std::vector<uint8_t>;

int width(DType t) { return t == DType::kBool ? 1 : (t == DType::kF32 || t == DType::kI32) ? 4 : 2; }

// Elements of `dtype` from their bit patterns (bool: 0 or 1).
Bytes elements(DType dtype, const std::vector<uint32_t>& bits) {
  Bytes out(bits.size() * static_cast<size_t>(width(dtype)));
  for (size_t i = 0; i < bits.size(); ++i) {
    if (width(dtype) == 4) std::memcpy(&out[4 * i], &bits[i], 4);
    else if (width(dtype) == 2) {
      const uint16_t h = static_cast<uint16_t>(bits[i]);
      std::memcpy(&out[2 * i], &h, 2);
    } else {
      out[i] = static_cast<uint8_t>(bits[i] & 1);
    }
  }
  return out;
}

// A bf16 or f16 value's bits, by truncation (inputs only: the reference backend is the oracle).
uint32_t half_of(DType dtype, float f) {
  const uint32_t b = std::bit_cast<uint32_t>(f);
  if (dtype == DType::kBF16) return b >> 16;
  if (dtype == DType::kF32) return b;
  const uint32_t sign = (b >> 16) & 0x8000, e = (b >> 23) & 0xFF;
  if (e < 113) return sign;                          // flushed: subnormals come from the bit patterns
  if (e > 142) return sign | 0x7C00;                 // infinity
  return sign | ((e - 112) << 10) | ((b >> 13) & 0x3FF);
}

// Specials of a bf16, f16 or f32 dtype, as bits: zeros, infinities, NaNs (quiet, signalling,
// negative), the smallest and largest subnormals, the smallest normal, the largest finite, and
// values at and beside 1, 2 and 0.5 (the ties of adds and divisions fall there).
std::vector<uint32_t> specials(DType dtype) {
  if (dtype == DType::kBF16)
    return {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC1, 0x0001, 0x807F, 0x0080, 0x7F7F, 0xFF7F,
            0x3F80, 0x3F81, 0x3F7F, 0xBF80, 0x4000, 0x4001, 0x3F00, 0x3F01, 0x4040, 0x4049, 0x42B1, 0xC2B1, 0x3C00};
  if (dtype == DType::kF16)
    return {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE01, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF,
            0x3C00, 0x3C01, 0x3BFF, 0xBC00, 0x4000, 0x4001, 0x3800, 0x3801, 0x4200, 0x4248, 0x5640, 0xD640, 0x1400};
  return {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00001, 0x00000001,
          0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x477FF000,
          0x477FEFFF, 0x33800000, 0x33000000, 0x33000001, 0x387FC000, 0x38800000, 0x3F801000, 0x3F803000};
}

// `n` operands: the specials, then random bit patterns and random values of moderate size.
std::vector<uint32_t> operands(DType dtype, size_t n, unsigned seed) {
  std::vector<uint32_t> bits = specials(dtype);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> moderate(-6.0f, 6.0f);
  const uint32_t mask = dtype == DType::kF32 ? 0xFFFFFFFFu : 0xFFFFu;
  while (bits.size() < n) bits.push_back(bits.size() % 2 ? (rng() & mask) : half_of(dtype, moderate(rng)));
  return bits;
}

// Every bf16 or f16 bit pattern.
std::vector<uint32_t> every_pattern() {
  std::vector<uint32_t> bits(65536);
  for (uint32_t i = 0; i < bits.size(); ++i) bits[i] = i;
  return bits;
}

std::string hex(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  std::memcpy(&v, p, static_cast<size_t>(bytes));
  char text[16];
  std::snprintf(text, sizeof text, "0x%0*x", 2 * bytes, v);
  return text;
}

struct Operand {
  Type type;
  Bytes data;
};

// `prim` on highway and on the reference backend, over the same buffers: the same output bytes,
// and highway runs it (no fallback).
void expect_reference_bits(Prim prim, const Params& params, const std::vector<Operand>& in, const Type& out,
                           const std::string& what) {
  SCOPED_TRACE(what);
  static BackendInstance highway(default_plugins(), "highway"), reference(default_plugins(), "reference");
  std::vector<Type> types;
  std::vector<const void*> inputs;
  for (const Operand& o : in) types.push_back(o.type), inputs.push_back(o.data.data());
  const auto on_highway = highway.prepare(prim, params, types, {out}, what);
  const auto on_reference = reference.prepare(prim, params, types, {out}, what);
  ASSERT_NE(on_highway, nullptr) << "highway does not run it";
  ASSERT_NE(on_reference, nullptr);
  size_t n = 1;
  for (int64_t d : out.shape) n *= static_cast<size_t>(d);
  const int bytes = width(out.dtype);
  Bytes got(n * static_cast<size_t>(bytes), 0xAB), expected(got.size(), 0xCD);
  on_highway->execute_allocating_workspace(inputs, {got.data()});
  on_reference->execute_allocating_workspace(inputs, {expected.data()});
  size_t differ = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i * bytes], &expected[i * bytes], static_cast<size_t>(bytes)) == 0) continue;
    if (++differ > 5) continue;
    std::string operands_text;
    for (const Operand& o : in) {
      const int w = width(o.type.dtype);
      const size_t at = o.data.size() == static_cast<size_t>(w) ? 0 : i;  // a scalar, or element i
      if (o.data.size() == n * static_cast<size_t>(w)) operands_text += " " + hex(&o.data[at * w], w);
    }
    ADD_FAILURE() << "element " << i << ": highway " << hex(&got[i * bytes], bytes) << ", reference "
                  << hex(&expected[i * bytes], bytes) << ", operands" << operands_text;
  }
  EXPECT_EQ(differ, 0u) << "elements whose bits differ, of " << n;
}

std::string dname(DType t) { return std::string(dtype_name(t)); }

Type vector_of(DType dtype, size_t n) { return Type{dtype, {static_cast<int64_t>(n)}, MemorySpace::kDevice}; }

Params with(const std::string& key, ParamValue value) {
  Params p;
  p.set(key, std::move(value));
  return p;
}

const DType kHalves[] = {DType::kBF16, DType::kF16};

TEST(HighwayHalfPrecision, UnaryOpsGiveTheReferenceBitsOnEveryOperand) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Prim unaries[] = {Prim::kNeg,  Prim::kExp,    Prim::kLog,    Prim::kSin,  Prim::kCos,
                          Prim::kTanh, Prim::kLogistic, Prim::kSqrt, Prim::kRsqrt, Prim::kSquare,
                          Prim::kRelu, Prim::kErf,    Prim::kStopGradient};
  for (DType t : kHalves) {
    const Operand x{vector_of(t, 65536), elements(t, every_pattern())};
    for (Prim p : unaries) expect_reference_bits(p, {}, {x}, x.type, std::string(prim_name(p)) + " " + dname(t));
    for (int64_t y : {2, 3, 4, 7, -1, -2, -3})
      expect_reference_bits(Prim::kIntegerPow, with("y", ParamValue::of_int(y)), {x}, x.type,
                            "integer_pow y=" + std::to_string(y) + " " + dname(t));
  }
}

TEST(HighwayHalfPrecision, BinaryOpsAndComparisonsGiveTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Prim binaries[] = {Prim::kAdd, Prim::kSub, Prim::kMul, Prim::kDiv, Prim::kMax, Prim::kMin, Prim::kPow};
  const Prim compares[] = {Prim::kGt, Prim::kGe, Prim::kLt, Prim::kLe, Prim::kEq, Prim::kNe};
  for (DType t : kHalves) {
    // Every pair of specials, then random pairs.
    const std::vector<uint32_t> s = specials(t);
    std::vector<uint32_t> a = operands(t, 12000, 1), b = operands(t, 12000, 2);
    for (size_t i = 0; i < s.size(); ++i)
      for (size_t j = 0; j < s.size(); ++j) a.push_back(s[i]), b.push_back(s[j]);
    const Operand x{vector_of(t, a.size()), elements(t, a)}, y{vector_of(t, b.size()), elements(t, b)};
    for (Prim p : binaries) expect_reference_bits(p, {}, {x, y}, x.type, std::string(prim_name(p)) + " " + dname(t));
    for (Prim p : compares)
      expect_reference_bits(p, {}, {x, y}, vector_of(DType::kBool, a.size()), std::string(prim_name(p)) + " " + dname(t));
  }
  // pow has no f32 kernel: f32 too runs the reference math on Highway, where it fuses.
  const Operand x{vector_of(DType::kF32, 4000), elements(DType::kF32, operands(DType::kF32, 4000, 12))};
  const Operand y{vector_of(DType::kF32, 4000), elements(DType::kF32, operands(DType::kF32, 4000, 13))};
  expect_reference_bits(Prim::kPow, {}, {x, y}, x.type, "pow f32");
}

// Operands of the output's rank with size-1 dims (a value per row, a row for all) and scalars.
TEST(HighwayHalfPrecision, BroadcastOperandsGiveTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  for (DType t : kHalves) {
    const Type full{t, {96, 40}, MemorySpace::kDevice};
    const Operand x{full, elements(t, operands(t, 96 * 40, 3))};
    const Operand per_row{Type{t, {96, 1}, MemorySpace::kDevice}, elements(t, operands(t, 96, 4))};
    const Operand each_row{Type{t, {1, 40}, MemorySpace::kDevice}, elements(t, operands(t, 40, 5))};
    const Operand scalar{Type{t, {}, MemorySpace::kDevice}, elements(t, {half_of(t, 1.3f)})};
    // An RMSNorm's at batch 1: [1, S, 1] and [1, S, D] beside [1, 1, D].
    const Type batch_one{t, {1, 96, 40}, MemorySpace::kDevice};
    const Operand row{Type{t, {1, 96, 1}, MemorySpace::kDevice}, per_row.data}, x1{batch_one, x.data};
    const Operand scale{Type{t, {1, 1, 40}, MemorySpace::kDevice}, each_row.data};
    expect_reference_bits(Prim::kMul, {}, {row, scale}, batch_one, "mul [1,S,1] [1,1,D] " + dname(t));
    expect_reference_bits(Prim::kMul, {}, {x1, scale}, batch_one, "mul [1,S,D] [1,1,D] " + dname(t));
    for (Prim p : {Prim::kAdd, Prim::kSub, Prim::kMul, Prim::kDiv, Prim::kMax})
      for (const Operand* o : {&per_row, &each_row, &scalar}) {
        const std::string what = std::string(prim_name(p)) + " " + dname(t) + " beside rank " + std::to_string(o->type.shape.size());
        expect_reference_bits(p, {}, {x, *o}, full, what);
        expect_reference_bits(p, {}, {*o, x}, full, what + ", on the left");
      }
    expect_reference_bits(Prim::kGe, {}, {x, scalar}, Type{DType::kBool, {96, 40}, MemorySpace::kDevice},
                          std::string("ge scalar ") + dname(t));
  }
}

TEST(HighwayHalfPrecision, SelectClampAndConversionsGiveTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  constexpr size_t n = 9001;
  for (DType t : kHalves) {
    const Operand pred{vector_of(DType::kBool, n), elements(DType::kBool, operands(DType::kF32, n, 6))};
    const Operand a{vector_of(t, n), elements(t, operands(t, n, 7))}, b{vector_of(t, n), elements(t, operands(t, n, 8))};
    const Operand c{vector_of(t, n), elements(t, operands(t, n, 9))};
    const Operand lo{Type{t, {}, MemorySpace::kDevice}, elements(t, {half_of(t, -0.75f)})};
    const Operand hi{Type{t, {}, MemorySpace::kDevice}, elements(t, {half_of(t, 2.5f)})};
    const std::string name = dname(t);
    expect_reference_bits(Prim::kSelectN, {}, {pred, a, b}, a.type, "select_n " + name);
    expect_reference_bits(Prim::kClamp, {}, {lo, a, hi}, a.type, "clamp scalar bounds " + name);
    expect_reference_bits(Prim::kClamp, {}, {a, b, c}, a.type, "clamp " + name);
    const Operand f32{vector_of(DType::kF32, n), elements(DType::kF32, operands(DType::kF32, n, 10))};
    const Operand every{vector_of(t, 65536), elements(t, every_pattern())};
    const auto convert = [](DType to) { return with("new_dtype", ParamValue::of_ident(dname(to))); };
    expect_reference_bits(Prim::kConvertElementType, convert(t), {f32}, a.type, "f32 to " + name);
    expect_reference_bits(Prim::kConvertElementType, convert(DType::kF32), {every}, vector_of(DType::kF32, 65536), name + " to f32");
    const Operand i32{vector_of(DType::kI32, n), elements(DType::kI32, operands(DType::kF32, n, 11))};
    expect_reference_bits(Prim::kConvertElementType, convert(t), {pred}, a.type, "bool to " + name);
    expect_reference_bits(Prim::kConvertElementType, convert(t), {i32}, a.type, "i32 to " + name);
    expect_reference_bits(Prim::kConvertElementType, convert(DType::kBool), {every}, vector_of(DType::kBool, 65536), name + " to bool");
    expect_reference_bits(Prim::kConvertElementType, convert(DType::kI32), {every}, vector_of(DType::kI32, 65536), name + " to i32");
    const DType other = t == DType::kBF16 ? DType::kF16 : DType::kBF16;
    expect_reference_bits(Prim::kConvertElementType, convert(other), {every}, vector_of(other, 65536),
                          name + " to " + dname(other));
  }
}

// A single bf16 or f16 op has an estimate (ABI 1.7's expected_ns), above the f32 op's: its operands
// are promoted and its result rounded too.
TEST(HighwayHalfPrecision, SingleOpsHaveEstimatesAboveF32s) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  BackendInstance highway(default_plugins(), "highway");
  for (Prim p : {Prim::kAdd, Prim::kExp}) {
    const bool binary = p == Prim::kAdd;
    auto estimate = [&](DType t) {
      const std::vector<Type> in(binary ? 2 : 1, vector_of(t, 16384));
      return highway.expected_ns(p, {}, in, {vector_of(t, 16384)});
    };
    const std::optional<double> f32 = estimate(DType::kF32), bf16 = estimate(DType::kBF16), f16 = estimate(DType::kF16);
    ASSERT_TRUE(f32 && bf16 && f16) << prim_name(p);
    EXPECT_GT(*bf16, *f32) << prim_name(p);
    EXPECT_GT(*f16, *bf16) << prim_name(p);
  }
}

// A gelu and a layer norm's arithmetic in bf16 and f16 (a value per row, a row for all, scalars),
// f32 parts between conversions, a comparison and a select: fused on highway, every bf16 or f16
// part rounded where JAX rounds it (pairs of binary parts in one pass, no NaN among these values),
// so the reference backend's bits.
TEST(HighwayHalfPrecision, FusedChainsGiveTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  for (const char* t : {"bf16", "f16"}) {
    SCOPED_TRACE(t);
    std::string text = R"({ lambda ; x:T[8,300] y:T[8,300] m:T[8,1] g:T[1,300] r:T[8]. let
      q:T[8,300] = broadcast_in_dim[shape=(8, 300) broadcast_dimensions=(0,)] r
      o:T[8,300] = broadcast_in_dim[shape=(8, 300) broadcast_dimensions=()] 1.5:T[]
      u:T[8,300] = mul x q
      v:T[8,300] = add u o
      a:T[8,300] = sub v m
      b:T[8,300] = mul a g
      c:T[8,300] = integer_pow[y=3] b
      d:T[8,300] = mul c 0.044715:T[]
      e:T[8,300] = add b d
      f:T[8,300] = tanh e
      h:f32[8,300] = convert_element_type[new_dtype=float32] f
      i:f32[8,300] = mul h h
      j:T[8,300] = convert_element_type[new_dtype=TT] i
      k:T[8,300] = exp y
      p:bool[8,300] = ge k j
      z:T[8,300] = select_n p k j
      w:T[8,300] = rsqrt k
    in (z, w) })";
    for (size_t at; (at = text.find("TT")) != std::string::npos;) text.replace(at, 2, t[0] == 'b' ? "bfloat16" : "float16");
    for (size_t at; (at = text.find(":T")) != std::string::npos;) text.replace(at + 1, 1, t);
    const Program program = parse_program(text, "chain");
    const Linearization lin = linearize_with(program);
    const RandomInputs in = random_inputs(program, 5, -3, 3, false);
    expect_fused_reference_bits(lin, in);
  }
}

// A bf16 or f16 value's bits as the double a Tensor holds (a NaN as a quiet one).
double value_of(DType dtype, uint32_t bits) {
  if (dtype == DType::kBF16) return std::bit_cast<float>(bits << 16);
  const int sign = bits & 0x8000 ? -1 : 1, e = static_cast<int>((bits >> 10) & 0x1F), m = static_cast<int>(bits & 0x3FF);
  if (e == 0x1F) return m ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(e ? m + 1024 : m, (e ? e : 1) - 25);
}

// Parts whose operands are read in their pass as the inputs' bits beside values of earlier parts (a
// one-hot mask converted from bool, a count from i32), a value per row, a scalar, parts whose f32
// values no later part reads, moves (select_n, a copy) that round nothing, and two binary parts in
// one pass (each alone in a segment with a NaN): every operand's specials (NaNs, infinities, values
// beside rounding boundaries) and random bit patterns, so the reference backend's bits.
TEST(HighwayHalfPrecision, FusedChainsReadingInputBitsGiveTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  for (DType t : kHalves) {
    SCOPED_TRACE(dname(t));
    std::string text = R"({ lambda ; x:T[8,300] y:T[8,300] m:T[8,1] b:bool[8,300] n:i32[8,300] s:T[]. let
      c:T[8,300] = convert_element_type[new_dtype=TT] b
      d:T[8,300] = mul x c
      e:T[8,300] = sub y m
      f:T[8,300] = exp e
      g:T[8,300] = convert_element_type[new_dtype=TT] n
      h:T[8,300] = add g s
      k:T[8,300] = max f d
      r:T[8,300] = tanh h
      u:T[8,300] = div r 0.7:T[]
      w:T[8,300] = select_n b e k
      v:T[8,300] = stop_gradient w
      a:T[8,300] = mul e 0.5:T[]
      z:T[8,300] = add a e
    in (c, d, k, u, g, v, z) })";
    for (size_t at; (at = text.find("TT")) != std::string::npos;) text.replace(at, 2, t == DType::kBF16 ? "bfloat16" : "float16");
    for (size_t at; (at = text.find(":T")) != std::string::npos;) text.replace(at + 1, 1, dname(t));
    const Program program = parse_program(text, "chain");
    const Linearization lin = linearize_with(program);
    RandomInputs in;
    auto halves = [&](size_t n, unsigned seed) {
      std::vector<double> v;
      for (uint32_t bits : operands(t, n, seed)) v.push_back(value_of(t, bits));
      std::shuffle(v.begin(), v.end(), std::mt19937(seed));  // the specials beside every kind of operand
      v.resize(n);  // a short operand holds some of the specials
      return v;
    };
    std::vector<double> mask(2400), counts(2400);
    std::mt19937 rng(3);
    for (double& v : mask) v = static_cast<double>(rng() % 2);
    const std::vector<uint32_t> count_bits = operands(DType::kF32, 2400, 4);  // i32s of every size: ties to round
    for (size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<int32_t>(count_bits[i]);
    const std::vector<std::vector<double>> data{halves(2400, 5), halves(2400, 6), halves(8, 7),
                                                mask, counts, {value_of(t, half_of(t, 1.3f))}};
    for (size_t a = 0; a < data.size(); ++a)
      in.arguments.push_back(Tensor{program.vars[static_cast<size_t>(program.invars[a])].type, data[a]});
    expect_fused_reference_bits(lin, in);
  }
}

}  // namespace
}  // namespace rematkit::testing
