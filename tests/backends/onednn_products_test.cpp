// The oneDNN backend's products (onednn_products.cpp). bf16 and f16 wherever it is built: natively
// where the CPU has AVX512_BF16, elsewhere oneDNN's f32 matmul on operands widened in the kernel's
// workspace, the result rounded back as XLA:CPU stores it (f32 accumulation, one rounding to nearest
// even). Checked against the reference backend (sums in double, one rounding) on plain, transposed
// and batched operands, with the rounding's ties and NaNs, in the workspace the kernel asks for.
// Transposed operands read by their strides or reordered into the workspace give the same answers;
// the backend estimates each product's time (ABI 1.7), widening included; bf16 convolutions run
// the same way; and products widened in blocks (forced small) agree with the reference backend and,
// where no block splits a sum, give the unblocked product's bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

#define SKIP_WITHOUT_ONEDNN() \
  if (!backend_installed("onednn")) GTEST_SKIP() << "the onednn backend is not built"

// IEEE binary16 from a value it holds exactly (every value given here is, or a NaN or an infinity),
// and any binary16 back: written out here rather than through _Float16, which clang 14 lacks on x86.
uint16_t f16_of_exact(float v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(v));
  if (std::isnan(a)) return static_cast<uint16_t>(sign | 0x7E00);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | 0x7C00);
  if (a == 0) return sign;
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  const int biased = e - 1 + 15;
  if (biased <= 0) return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::ldexp(a, 24)));  // subnormal
  return static_cast<uint16_t>(sign | (biased << 10) | static_cast<int>((2 * m - 1) * 1024));
}
double f16_value_of(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(1024 + m, e - 25);
}

// A value's bits in bf16 or f16 and back: bf16 as the top half of an f32 (every value given here
// is exact in bf16, so nothing rounds).
uint16_t half_bits(DType dtype, float v) {
  return dtype == DType::kBF16 ? static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16) : f16_of_exact(v);
}
double half_value(DType dtype, uint16_t h) {
  return dtype == DType::kBF16 ? std::bit_cast<float>(static_cast<uint32_t>(h) << 16) : f16_value_of(h);
}

// 16-bit elements of `dtype` (bf16 or f16).
struct HalfBuffer {
  DType dtype;
  std::vector<uint16_t> bits;
};

// Multiples of 1/64 in [-2, 2]: exact in both dtypes.
HalfBuffer random_half(DType dtype, size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> u(-128, 128);
  HalfBuffer b{dtype, std::vector<uint16_t>(n)};
  for (uint16_t& x : b.bits) x = half_bits(dtype, static_cast<float>(u(rng)) / 64);
  return b;
}

Type type_of(DType dtype, std::vector<int64_t> shape) { return Type{dtype, std::move(shape), MemorySpace::kDevice}; }

// The backend's bf16_matmul option: "native" multiplies bf16 natively where the CPU can (widened
// elsewhere), "widened" widens everywhere, so both paths are checked on a CPU with AVX512_BF16.
Params bf16_products(const char* how) {
  Params options;
  options.set("bf16_matmul", ParamValue::of_string(how));
  return options;
}

// One product on `backend`, its result's elements as doubles. The workspace is exactly the bytes the
// kernel declared, so a widened copy outside them would be caught by the sanitizer build.
std::vector<double> run_product(const std::string& backend, const DotDims& dims, const HalfBuffer& a, const std::vector<int64_t>& as,
                                const HalfBuffer& b, const std::vector<int64_t>& bs, DType result, const std::vector<int64_t>& cs,
                                size_t* workspace_bytes = nullptr, const Params& options = {}) {
  BackendInstance instance(default_plugins(), backend, options);
  const auto kernel = instance.prepare(Prim::kDotGeneral, dot_general_params(dims, result), {type_of(a.dtype, as), type_of(b.dtype, bs)},
                                       {type_of(result, cs)}, "half product");
  if (!kernel) return {};
  if (workspace_bytes) *workspace_bytes = kernel->workspace_bytes();
  size_t n = 1;
  for (int64_t d : cs) n *= static_cast<size_t>(d);
  std::vector<float> out_f32(n);
  std::vector<uint16_t> out_half(n);
  void* out = result == DType::kF32 ? static_cast<void*>(out_f32.data()) : static_cast<void*>(out_half.data());
  kernel->execute_allocating_workspace({a.bits.data(), b.bits.data()}, {out});
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i)
    values[i] = result == DType::kF32 ? out_f32[i] : half_value(result, out_half[i]);
  return values;
}

struct ProductCase {
  const char* name;
  DotDims dims;
  std::vector<int64_t> a, b, c;
};

// Plain, the lhs transposed (a weight's gradient), the rhs transposed (an input's gradient),
// batched in front, and a [B, S, D] activation times a weight; odd sizes, a contraction of 301.
const ProductCase kCases[] = {
    {"plain", {{1}, {0}, {}, {}}, {37, 301}, {301, 19}, {37, 19}},
    {"lhs_transposed", {{0}, {0}, {}, {}}, {301, 37}, {301, 19}, {37, 19}},
    {"rhs_transposed", {{1}, {1}, {}, {}}, {37, 301}, {19, 301}, {37, 19}},
    {"batched", {{2}, {1}, {0}, {0}}, {3, 17, 45}, {3, 45, 11}, {3, 17, 11}},
    {"activation_times_weight", {{2}, {0}, {}, {}}, {2, 9, 64}, {64, 23}, {2, 9, 23}},
};

// Against the reference backend: an f32 result within f32 accumulation's error (k * 2^-24 of the
// sum of |a b|), a bf16 or f16 one within that plus one ulp of the result's dtype (a double sum and
// an f32 sum on either side of a rounding boundary); an operand read wrongly misses by far more.
TEST(OneDnnProducts, AgreesWithTheReferenceBackend) {
  SKIP_WITHOUT_ONEDNN();
  std::mt19937 rng(46);
  for (const char* bf16 : {"native", "widened"})
    for (DType in : {DType::kBF16, DType::kF16})
      for (const ProductCase& c : kCases)
        for (DType result : {in, DType::kF32}) {
          SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(in)) + " -> " + std::string(dtype_name(result)) +
                       " bf16_matmul=" + bf16);
          size_t na = 1, nb = 1;
          for (int64_t d : c.a) na *= static_cast<size_t>(d);
          for (int64_t d : c.b) nb *= static_cast<size_t>(d);
          const HalfBuffer a = random_half(in, na, rng), b = random_half(in, nb, rng);
          const std::vector<double> got = run_product("onednn", c.dims, a, c.a, b, c.b, result, c.c, nullptr, bf16_products(bf16));
          ASSERT_FALSE(got.empty()) << "onednn declined a " << dtype_name(in) << " product";
          const std::vector<double> expected = run_product("reference", c.dims, a, c.a, b, c.b, result, c.c);
          ASSERT_EQ(got.size(), expected.size());
          const double k = static_cast<double>(c.a[c.dims.lhs_contract[0]]);
          const double ulp = result == DType::kF32 ? 0 : (in == DType::kBF16 ? 0x1p-7 : 0x1p-10);
          for (size_t i = 0; i < got.size(); ++i) {
            // |a| and |b| are at most 2: the sum of |a b| is at most 4k.
            const double bound = k * 0x1p-24 * 4 * k + ulp * std::fabs(expected[i]);
            EXPECT_NEAR(got[i], expected[i], bound) << i;
          }
        }
}

// Exact sums round as the reference's bf16_bits and f16_bits (element_values.hpp) do: to nearest
// even at the ties (257 -> 256 and 259 -> 260 in bf16; 2049 -> 2048 and 2051 -> 2052 in f16), f16
// past its range to infinity and below its normals to a subnormal, and a NaN operand gives a NaN.
TEST(OneDnnProducts, RoundsTiesToEvenAndKeepsNaNs) {
  SKIP_WITHOUT_ONEDNN();
  for (const char* bf16 : {"native", "widened"})
    for (DType in : {DType::kBF16, DType::kF16}) {
      SCOPED_TRACE(std::string(dtype_name(in)) + " bf16_matmul=" + bf16);
      // a's rows sum to big + 1, big + 3, big + 2, 1 and NaN; b is a column of ones.
      const float big = in == DType::kBF16 ? 256 : 2048, nan = std::nanf("");
      std::vector<std::vector<float>> rows = {{big, 1, 0, 0}, {big, 1, 1, 1}, {big, 1, 1, 0}, {1, 0, 0, 0}};
      std::vector<double> rounded = {big, big + 4.0, big + 2.0, 1};
      if (in == DType::kF16) {  // past f16's largest finite value (65504) to infinity; a subnormal sum exactly
        rows.push_back({60000, 10000, 0, 0}), rounded.push_back(INFINITY);
        rows.push_back({0x1p-20f, 0x1p-24f, 0, 0}), rounded.push_back(0x1.1p-20);
      }
      rows.push_back({nan, 0, 0, 0});
      constexpr int64_t k = 4;
      HalfBuffer a{in, {}}, b{in, std::vector<uint16_t>(k, half_bits(in, 1))};
      for (const std::vector<float>& row : rows)
        for (float v : row) a.bits.push_back(half_bits(in, v));
      const int64_t m = static_cast<int64_t>(rows.size());
      const std::vector<double> got =
          run_product("onednn", {{1}, {0}, {}, {}}, a, {m, k}, b, {k, 1}, in, {m, 1}, nullptr, bf16_products(bf16));
      ASSERT_EQ(got.size(), rows.size());
      for (size_t i = 0; i < rounded.size(); ++i) EXPECT_EQ(got[i], rounded[i]) << i;
      EXPECT_TRUE(std::isnan(got.back()));
    }
}

// A transposed operand copied into the plain layout first (transposed_operands='reordered') or read
// by its strides: both agree with the reference backend, in f32 and widened bf16, and the copy is
// declared as workspace, beside what the same product on the operand laid out plain declares (its
// widened copies, oneDNN's scratchpad for the plain layout, which reading by strides may differ from).
TEST(OneDnnProducts, ReadTransposedOperandsByStridesOrReordered) {
  SKIP_WITHOUT_ONEDNN();
  std::mt19937 rng(7);
  for (const ProductCase& c : {kCases[1], kCases[2]})
    for (DType in : {DType::kBF16, DType::kF32}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(in)));
      size_t na = 1, nb = 1;
      for (int64_t d : c.a) na *= static_cast<size_t>(d);
      for (int64_t d : c.b) nb *= static_cast<size_t>(d);
      // f32 operands hold the bf16 values as floats: the product's inputs are exact either way.
      const HalfBuffer ha = random_half(DType::kBF16, na, rng), hb = random_half(DType::kBF16, nb, rng);
      std::vector<float> fa(na), fb(nb);
      for (size_t i = 0; i < na; ++i) fa[i] = static_cast<float>(half_value(DType::kBF16, ha.bits[i]));
      for (size_t i = 0; i < nb; ++i) fb[i] = static_cast<float>(half_value(DType::kBF16, hb.bits[i]));
      std::vector<std::vector<double>> results;
      std::vector<size_t> workspaces;
      for (const char* how : {"strides", "reordered"}) {
        Params options = bf16_products("widened");
        options.set("transposed_operands", ParamValue::of_string(how));
        BackendInstance onednn(default_plugins(), "onednn", options);
        const auto kernel = onednn.prepare(Prim::kDotGeneral, dot_general_params(c.dims, DType::kF32),
                                           {type_of(in, c.a), type_of(in, c.b)}, {type_of(DType::kF32, c.c)}, "product");
        ASSERT_NE(kernel, nullptr) << how;
        workspaces.push_back(kernel->workspace_bytes());
        std::vector<float> out(static_cast<size_t>(c.c[0] * c.c[1]));
        const void* a = in == DType::kF32 ? static_cast<const void*>(fa.data()) : ha.bits.data();
        const void* b = in == DType::kF32 ? static_cast<const void*>(fb.data()) : hb.bits.data();
        kernel->execute_allocating_workspace({a, b}, {out.data()});
        results.emplace_back(out.begin(), out.end());
      }
      const std::vector<double> expected = run_product("reference", c.dims, ha, c.a, hb, c.b, DType::kF32, c.c);
      const double k = 301;
      for (const std::vector<double>& got : results)
        for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], k * 0x1p-24 * 4 * k) << i;
      // The plain copy of the transposed operand (37x301 or 19x301 floats) is in the workspace.
      const ProductCase& plain = kCases[0];
      BackendInstance onednn(default_plugins(), "onednn", bf16_products("widened"));
      const auto plain_kernel = onednn.prepare(Prim::kDotGeneral, dot_general_params(plain.dims, DType::kF32),
                                               {type_of(in, plain.a), type_of(in, plain.b)}, {type_of(DType::kF32, plain.c)}, "plain");
      ASSERT_NE(plain_kernel, nullptr);
      EXPECT_GE(workspaces[1], plain_kernel->workspace_bytes() + 19 * 301 * sizeof(float));
    }
}

// Every product oneDNN runs has an estimate (ABI 1.7's expected_ns), growing with its multiply-adds;
// a product whose bf16 operands are widened costs more than its f32 twin by the conversions.
// Weights copied into the layout oneDNN's matmul prefers (weights_layout='preferred', the default)
// or read as they lie: both agree with the reference backend, plain and transposed, in f32 and in
// bf16 widened to f32. The copy is
// declared as workspace where oneDNN prefers another layout (its blocked ones on AVX-512; on AVX2
// its gemm takes the plain one, and nothing is copied), and is made only from 768 rows and up to
// 32 MiB of weights.
TEST(OneDnnProducts, CopyWeightsIntoThePreferredLayoutWhereItPays) {
  SKIP_WITHOUT_ONEDNN();
  std::mt19937 rng(768);
  auto prepared = [](const char* layout, const DotDims& dims, std::vector<int64_t> as, std::vector<int64_t> bs,
                     std::vector<int64_t> cs) {
    Params options;
    options.set("weights_layout", ParamValue::of_string(layout));
    auto instance = std::make_shared<BackendInstance>(default_plugins(), "onednn", options);
    auto kernel = instance->prepare(Prim::kDotGeneral, dot_general_params(dims, DType::kF32),
                                    {type_of(DType::kF32, std::move(as)), type_of(DType::kF32, std::move(bs))},
                                    {type_of(DType::kF32, std::move(cs))}, "product");
    return std::make_pair(instance, std::move(kernel));
  };
  constexpr int64_t m = 768, k = 96, n = 200;
  for (const bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "weights transposed" : "weights plain");
    const DotDims dims = transposed ? DotDims{{1}, {1}, {}, {}} : DotDims{{1}, {0}, {}, {}};
    const std::vector<int64_t> as = {m, k}, bs = transposed ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
    // f32 operands holding bf16 values: exact inputs for the reference's bf16 product.
    const HalfBuffer ha = random_half(DType::kBF16, m * k, rng), hb = random_half(DType::kBF16, k * n, rng);
    std::vector<float> fa(ha.bits.size()), fb(hb.bits.size());
    for (size_t i = 0; i < fa.size(); ++i) fa[i] = half_value(DType::kBF16, ha.bits[i]);
    for (size_t i = 0; i < fb.size(); ++i) fb[i] = half_value(DType::kBF16, hb.bits[i]);
    const std::vector<double> expected = run_product("reference", dims, ha, as, hb, bs, DType::kF32, {m, n});
    std::vector<size_t> workspaces;
    for (const char* layout : {"preferred", "as_it_lies"}) {
      auto [instance, kernel] = prepared(layout, dims, as, bs, {m, n});
      ASSERT_NE(kernel, nullptr) << layout;
      workspaces.push_back(kernel->workspace_bytes());
      std::vector<float> out(static_cast<size_t>(m * n));
      kernel->execute_allocating_workspace({fa.data(), fb.data()}, {out.data()});
      for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected[i], k * 0x1p-24 * 4 * k) << layout << " " << i;
      // bf16 widened to f32 first: the f32 product's copy then reads the widened weights.
      Params widened = bf16_products("widened");
      widened.set("weights_layout", ParamValue::of_string(layout));
      const std::vector<double> got = run_product("onednn", dims, ha, as, hb, bs, DType::kF32, {m, n}, nullptr, widened);
      ASSERT_EQ(got.size(), expected.size()) << layout;
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], k * 0x1p-24 * 4 * k) << layout << " bf16 " << i;
    }
    if (transposed) continue;  // read as it lies, a transposed weight may be copied plain instead
    const size_t copy = static_cast<size_t>(k * n) * sizeof(float);
    EXPECT_TRUE(workspaces[0] == workspaces[1] || workspaces[0] >= workspaces[1] + copy) << workspaces[0] << " " << workspaces[1];
    // oneDNN 2.6's matmul on AVX-512 (brgemm) prefers blocked weights; nothing caps its ISA here.
    if (__builtin_cpu_supports("avx512f") && !std::getenv("ONEDNN_MAX_CPU_ISA")) {
      EXPECT_GE(workspaces[0], workspaces[1] + copy);
    }
  }
  // One row fewer, or more than 32 MiB of weights: read as they lie, whatever oneDNN prefers.
  for (const auto& [rows, contract, columns] : {std::tuple<int64_t, int64_t, int64_t>{m - 1, k, n}, {m, 2048, 4097}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(contract) + "x" + std::to_string(columns));
    const DotDims dims{{1}, {0}, {}, {}};
    auto preferred = prepared("preferred", dims, {rows, contract}, {contract, columns}, {rows, columns});
    auto as_it_lies = prepared("as_it_lies", dims, {rows, contract}, {contract, columns}, {rows, columns});
    ASSERT_NE(preferred.second, nullptr);
    ASSERT_NE(as_it_lies.second, nullptr);
    EXPECT_EQ(preferred.second->workspace_bytes(), as_it_lies.second->workspace_bytes());
  }
}

// An f32 product with an operand over 32 MiB that oneDNN's matmul would read in a layout not its
// own (weights too large to copy, plain or transposed; a transposed lhs) runs on oneDNN's sgemm
// (large_operands='sgemm', the default), which asks for no workspace; with 'matmul' on the matmul.
// Both agree with the reference backend. Where the matmul is brgemm (AVX-512, its ISA not capped),
// it asks for a scratchpad that sgemm does not.
TEST(OneDnnProducts, RunLargeOperandsOnSgemmWhereTheMatmulWouldRepackThem) {
  SKIP_WITHOUT_ONEDNN();
  std::mt19937 rng(4097);
  constexpr int64_t small = 3, k = 2048, large = 4097;  // 2048 x 4097 floats: 32 MiB and 32 KiB
  struct LargeCase {
    const char* name;
    DotDims dims;
    std::vector<int64_t> a, b, c;
  };
  const LargeCase cases[] = {
      {"weights plain", {{1}, {0}, {}, {}}, {small, k}, {k, large}, {small, large}},
      {"weights transposed", {{1}, {1}, {}, {}}, {small, k}, {large, k}, {small, large}},
      {"lhs transposed", {{0}, {0}, {}, {}}, {k, large}, {k, small}, {large, small}},
  };
  const bool brgemm = __builtin_cpu_supports("avx512f") && !std::getenv("ONEDNN_MAX_CPU_ISA");
  for (const LargeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const HalfBuffer ha = random_half(DType::kBF16, static_cast<size_t>(c.a[0] * c.a[1]), rng);
    const HalfBuffer hb = random_half(DType::kBF16, static_cast<size_t>(c.b[0] * c.b[1]), rng);
    std::vector<float> fa(ha.bits.size()), fb(hb.bits.size());
    for (size_t i = 0; i < fa.size(); ++i) fa[i] = static_cast<float>(half_value(DType::kBF16, ha.bits[i]));
    for (size_t i = 0; i < fb.size(); ++i) fb[i] = static_cast<float>(half_value(DType::kBF16, hb.bits[i]));
    const std::vector<double> expected = run_product("reference", c.dims, ha, c.a, hb, c.b, DType::kF32, c.c);
    std::vector<size_t> workspaces;
    for (const char* how : {"sgemm", "matmul"}) {
      Params options;
      options.set("large_operands", ParamValue::of_string(how));
      BackendInstance onednn(default_plugins(), "onednn", options);
      const auto kernel =
          onednn.prepare(Prim::kDotGeneral, dot_general_params(c.dims, DType::kF32),
                         {type_of(DType::kF32, c.a), type_of(DType::kF32, c.b)}, {type_of(DType::kF32, c.c)}, "large product");
      ASSERT_NE(kernel, nullptr) << how;
      workspaces.push_back(kernel->workspace_bytes());
      std::vector<float> out(expected.size());
      kernel->execute_allocating_workspace({fa.data(), fb.data()}, {out.data()});
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], k * 0x1p-24 * 4 * k) << how << " " << i;
    }
    if (brgemm) {
      EXPECT_EQ(workspaces[0], 0u);
      EXPECT_GT(workspaces[1], 0u);
    }
  }
}

TEST(OneDnnProducts, EstimateEachProductWideningIncluded) {
  SKIP_WITHOUT_ONEDNN();
  BackendInstance onednn(default_plugins(), "onednn");
  auto estimate = [&](DType in, DType out, int64_t m, int64_t k, int64_t n) {
    return onednn.expected_ns(Prim::kDotGeneral, dot_general_params({{1}, {0}, {}, {}}, out),
                              {type_of(in, {m, k}), type_of(in, {k, n})}, {type_of(out, {m, n})});
  };
  const std::optional<double> small = estimate(DType::kF32, DType::kF32, 64, 64, 64),
                              large = estimate(DType::kF32, DType::kF32, 1024, 768, 3072);
  ASSERT_TRUE(small && large);
  EXPECT_GT(*large, 1000 * *small);
  const std::optional<double> bf16 = estimate(DType::kBF16, DType::kBF16, 1024, 768, 3072);
  ASSERT_TRUE(bf16.has_value());
  EXPECT_GE(*bf16, *large);  // equal where the CPU multiplies bf16 natively
}

// A bf16 convolution (JAX counts it as a dot) and its two transposes run on oneDNN: natively where
// the CPU multiplies bf16, else (and with bf16_matmul='widened') as f32 ones on widened copies. A
// strided 3x3 NHWC/HWIO convolution's gradient on `onednn,reference` agrees with the reference
// backend's within a bf16 rounding or two of each value (the two round differently summed values),
// and no convolution is left to the reference backend; each of the three convolutions alone, on
// either path, agrees with the reference backend's.
const char* kBf16Convolution = R"({ lambda ; x:bf16[2,7,8,4] w:bf16[3,3,4,6]. let
    c:bf16[2,4,4,6] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(2, 2)] x w
    d:bf16[2,4,4,6] = mul c c
  in (d,) })";

TEST(OneDnnProducts, RunBf16ConvolutionsAndTheirTransposes) {
  SKIP_WITHOUT_ONEDNN();
  const Program program = parse_program(kBf16Convolution, "bf16 convolution");
  const Linearization lin = linearize_with(program);
  const BackendOptions options{{"onednn", "reference"}, &default_plugins()};
  const StepProgram steps = build_step_program(lin, options, Pass::kBackward, InputMode::kLoadedEachRun);
  std::vector<std::string> convolutions;
  for (const Step& step : steps.steps())
    if (step.kind == StepKind::kKernel && lin.graph.eqns[step.equation].prim == Prim::kConvGeneralDilated)
      convolutions.push_back(step.kernel->backend());
  EXPECT_EQ(convolutions, (std::vector<std::string>{"onednn", "onednn", "onednn"}));
  const RandomInputs in = random_inputs(program, 46);
  const GradientResult got = run_gradient(lin, in.constants, in.arguments, options);
  const GradientResult expected = run_gradient(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  for (size_t a = 0; a < expected.gradients.size(); ++a) {
    ASSERT_TRUE(got.gradients[a] && expected.gradients[a]);
    double scale = 0;
    for (double v : expected.gradients[a]->data) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < got.gradients[a]->data.size(); ++i)
      EXPECT_NEAR(got.gradients[a]->data[i], expected.gradients[a]->data[i], 0x1p-6 * scale) << a << " " << i;
  }
}

TEST(OneDnnProducts, RunEachBf16ConvolutionNativelyOrWidened) {
  SKIP_WITHOUT_ONEDNN();
  const Linearization lin = linearize_with(parse_program(kBf16Convolution, "bf16 convolution"));
  std::mt19937 rng(4646);
  int convolutions = 0;
  for (const FlatEquation& eqn : lin.graph.eqns) {
    if (eqn.prim != Prim::kConvGeneralDilated) continue;
    ++convolutions;
    std::vector<Type> ins, outs;
    std::vector<HalfBuffer> operands;
    for (ValueId v : eqn.inputs) {
      ins.push_back(lin.graph.values[v].type);
      operands.push_back(random_half(DType::kBF16, static_cast<size_t>(ins.back().num_elements()), rng));
    }
    for (ValueId v : eqn.outputs) outs.push_back(lin.graph.values[v].type);
    ASSERT_EQ(ins.size(), 2u);
    ASSERT_EQ(outs.size(), 1u);
    auto run = [&](const std::string& backend, const Params& options) {
      BackendInstance instance(default_plugins(), backend, options);
      const auto kernel = instance.prepare(eqn.prim, eqn.params, ins, outs, "convolution");
      EXPECT_NE(kernel, nullptr) << backend;
      if (!kernel) return std::vector<double>{};
      std::vector<uint16_t> out(static_cast<size_t>(outs[0].num_elements()));
      kernel->execute_allocating_workspace({operands[0].bits.data(), operands[1].bits.data()}, {out.data()});
      std::vector<double> values;
      for (uint16_t bits : out) values.push_back(half_value(DType::kBF16, bits));
      return values;
    };
    const std::vector<double> expected = run("reference", {});
    double scale = 0;
    for (double v : expected) scale = std::max(scale, std::fabs(v));
    for (const char* bf16 : {"native", "widened"}) {
      SCOPED_TRACE(std::string(prim_name(eqn.origin)) + "'s convolution " + std::to_string(convolutions) +
                   ", bf16_matmul=" + bf16);
      const std::vector<double> got = run("onednn", bf16_products(bf16));
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 0x1p-6 * scale) << i;
    }
  }
  EXPECT_GE(convolutions, 3);  // the forward one and its two transposes, at least
}

// Widened products in blocks (onednn_blocked_products.cpp), forced onto small shapes by a tiny
// widened_block_bytes: each split, with the layouts a gpt's products have (a weight read
// transposed, "ba"; an activation read transposed for a weight's gradient; attention batched over
// (B, H) of a [B, S, H, Dh] operand, "acbd", and its transpose, "abdc"); every last block shorter.
struct BlockedCase {
  const char* name;
  DotDims dims;
  std::vector<int64_t> a, b, c;
  int64_t block_bytes;
  bool bitwise;  // the same bits as unblocked: each result element summed in one primitive call
};
const BlockedCase kBlockedCases[] = {
    {"columns", {{1}, {0}, {}, {}}, {37, 150}, {150, 300}, {37, 300}, 4, true},
    {"columns_weight_transposed", {{1}, {1}, {}, {}}, {37, 150}, {300, 150}, {37, 300}, 4, true},
    {"rows", {{1}, {0}, {}, {}}, {300, 150}, {150, 37}, {300, 37}, 4, true},
    {"rows_lhs_transposed", {{0}, {0}, {}, {}}, {150, 300}, {150, 37}, {300, 37}, 4, true},
    {"contracted_lhs_transposed", {{0}, {0}, {}, {}}, {301, 37}, {301, 19}, {37, 19}, 8000, false},
    {"contracted_rhs_transposed", {{1}, {1}, {}, {}}, {37, 301}, {19, 301}, {37, 19}, 8000, false},
    {"batch_scores", {{3}, {3}, {0, 2}, {0, 2}}, {2, 40, 3, 24}, {2, 40, 3, 24}, {2, 3, 40, 40}, 4 * 4 * 3520, true},
    {"batch_values", {{3}, {1}, {0, 1}, {0, 2}}, {2, 3, 40, 40}, {2, 40, 3, 24}, {2, 3, 40, 24}, 4, true},
};

size_t elements_of(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// Widened (bf16 too, on a CPU that multiplies it natively), in blocks of `bytes`.
Params block_budget(int64_t bytes) {
  Params options = bf16_products("widened");
  options.set("widened_block_bytes", ParamValue::of_int(bytes));
  return options;
}

// Against the reference backend within AgreesWithTheReferenceBackend's bound; the same bits as the
// unblocked product where no block splits a sum; less workspace than the whole widened copies.
TEST(OneDnnBlockedProducts, AgreeWithTheReferenceAndTheUnblockedProduct) {
  SKIP_WITHOUT_ONEDNN();
  std::mt19937 rng(4646);
  for (DType in : {DType::kBF16, DType::kF16})
    for (const BlockedCase& c : kBlockedCases)
      for (DType result : {in, DType::kF32}) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(in)) + " -> " + std::string(dtype_name(result)));
        const HalfBuffer a = random_half(in, elements_of(c.a), rng), b = random_half(in, elements_of(c.b), rng);
        size_t blocked_workspace = 0, whole_workspace = 0;
        const std::vector<double> got =
            run_product("onednn", c.dims, a, c.a, b, c.b, result, c.c, &blocked_workspace, block_budget(c.block_bytes));
        ASSERT_FALSE(got.empty()) << "onednn declined the blocked product";
        const std::vector<double> expected = run_product("reference", c.dims, a, c.a, b, c.b, result, c.c);
        const double k = static_cast<double>(c.a[c.dims.lhs_contract[0]]);
        const double ulp = result == DType::kF32 ? 0 : (in == DType::kBF16 ? 0x1p-7 : 0x1p-10);
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_NEAR(got[i], expected[i], k * 0x1p-24 * 4 * k + ulp * std::fabs(expected[i])) << i;
        const std::vector<double> whole =
            run_product("onednn", c.dims, a, c.a, b, c.b, result, c.c, &whole_workspace, block_budget(0));
        if (whole.empty()) continue;  // oneDNN would run the unblocked one on its reference code: declined
        EXPECT_LT(blocked_workspace, whole_workspace);
        if (c.bitwise) {
          EXPECT_EQ(got, whole);
        }
      }
}

// A NaN operand gives NaNs in the blocks that read it, whichever block holds it: a row of the
// result where the NaN is in the lhs; in a split along K, in its last block, after the rounding
// of the earlier ones' sums.
TEST(OneDnnBlockedProducts, KeepNaNs) {
  SKIP_WITHOUT_ONEDNN();
  std::mt19937 rng(46);
  for (DType in : {DType::kBF16, DType::kF16})
    for (const BlockedCase& c : {kBlockedCases[0], kBlockedCases[2], kBlockedCases[4]}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(in)));
      HalfBuffer a = random_half(in, elements_of(c.a), rng);
      const HalfBuffer b = random_half(in, elements_of(c.b), rng);
      a.bits.back() = half_bits(in, std::nanf(""));  // the last row of a plain lhs, the last column of a transposed one
      const std::vector<double> got =
          run_product("onednn", c.dims, a, c.a, b, c.b, in, c.c, nullptr, block_budget(c.block_bytes));
      const std::vector<double> expected = run_product("reference", c.dims, a, c.a, b, c.b, in, c.c);
      ASSERT_EQ(got.size(), expected.size());
      size_t nans = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(std::isnan(got[i]), std::isnan(expected[i])) << i;
        nans += std::isnan(got[i]) ? 1 : 0;
      }
      EXPECT_EQ(nans, static_cast<size_t>(c.c.back()));  // one row of the result
    }
}

}  // namespace
}  // namespace rematkit::testing
