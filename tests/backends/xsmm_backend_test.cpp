// The xsmm backend (libxsmm 1.17's JIT kernels): it claims exactly the products libxsmm runs on
// the operands as they lie (plain, the lhs transposed, batched), declines the rest (the rhs
// transposed, other dtypes, fused equations, products past its size limit), agrees with the
// reference backend on odd sizes, writes its output without reading it, and its kernels run on
// several threads at once. The conformance test runs it on every case too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

bool has_xsmm() { return backend_installed("xsmm"); }
#define SKIP_WITHOUT_XSMM() \
  if (!has_xsmm()) GTEST_SKIP() << "the xsmm backend is not built (no libxsmm-dev)"

// Each product with the backend that must run it: xsmm for the plain product, the lhs transposed,
// a batch in front and in the middle, an activation times a weight and its gradient over (B, S);
// the next backend for the rhs transposed (libxsmm 1.17 has no TRANS_A in its column-major terms),
// both transposed, attention's q k^T, contracted dims in an order memory does not have, an empty
// one.
const char* kProducts = R"({ lambda ; a:f32[7,13] b:f32[13,5] t:f32[13,7] u:f32[5,13] p:f32[3,5,7] q:f32[3,7,2]
    s:f32[5,3,4] w:f32[3,4,6] x:f32[2,3,4] v:f32[4,5] y:f32[2,3,5] h:f32[2,3,4,5] k:f32[2,3,6,5]
    z:f32[3,0] e:f32[0,4]. let
      c1:f32[7,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b
      c2:f32[7,5] = dot_general[dimension_numbers=(([0], [0]), ([], []))] t b
      c5:f32[3,5,2] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] p q
      c6:f32[3,5,6] = dot_general[dimension_numbers=(([2], [1]), ([1], [0]))] s w
      c7:f32[2,3,5] = dot_general[dimension_numbers=(([2], [0]), ([], []))] x v
      c8:f32[4,5] = dot_general[dimension_numbers=(([0, 1], [0, 1]), ([], []))] x y
      c3:f32[7,5] = dot_general[dimension_numbers=(([1], [1]), ([], []))] a u
      c4:f32[7,5] = dot_general[dimension_numbers=(([0], [1]), ([], []))] t u
      c9:f32[2,3,4,6] = dot_general[dimension_numbers=(([3], [3]), ([0, 1], [0, 1]))] h k
      d1:f32[4,5] = dot_general[dimension_numbers=(([1, 0], [1, 0]), ([], []))] x y
      d3:f32[3,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] z e
    in (c1, c2, c5, c6, c7, c8, c3, c4, c9, d1, d3) })";

TEST(XsmmBackend, RunsTheProductsItClaimsAsTheInterpreterDoes) {
  SKIP_WITHOUT_XSMM();
  const Program program = parse_program(kProducts, "products");
  const Linearization lin = linearize_with(program);
  const BackendOptions options{{"xsmm", "reference"}, &default_plugins()};
  std::vector<std::string> expected_backends(6, "xsmm");
  expected_backends.resize(11, "reference");
  EXPECT_EQ(forward_step_backends(lin, options), expected_backends);
  const RandomInputs in = random_inputs(program, 29, 0.25, 2.0);
  const std::vector<Tensor> expected = evaluate_program(program, in.constants, in.arguments, Arithmetic::kFloat32);
  expect_outputs_near(run_forward(lin, in.constants, in.arguments, options), expected, 1e-6);
}

Type f32(Shape shape) { return Type{DType::kF32, std::move(shape), MemorySpace::kDevice}; }

// After oneDNN in a list, xsmm takes the products its estimate (expected_ns) says libxsmm runs
// faster, on any thread count: a classifier's 2x16x10 product, where a oneDNN call's fixed cost is
// most of the time, and not a 512x64x512 one, which libxsmm runs without blocking for the caches.
TEST(XsmmBackend, AfterOnednnTakesTheSmallProducts) {
  SKIP_WITHOUT_XSMM();
  if (!backend_installed("onednn")) GTEST_SKIP() << "the onednn backend is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[2,16] w:f32[16,10] a:f32[512,64] b:f32[64,512]. let
      c1:f32[2,10] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
      c2:f32[512,512] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b
    in (c1, c2) })",
                                         "products");
  const Linearization lin = linearize_with(program);
  for (int threads : {1, 2}) {
    BackendOptions options{{"onednn", "xsmm", "reference"}, &default_plugins()};
    options.threads = threads;
    EXPECT_EQ(forward_step_backends(lin, options), (std::vector<std::string>{"xsmm", "onednn"})) << threads << " threads";
  }
}

TEST(XsmmBackend, DeclinesOtherDtypesOtherPrimitivesAndLargeProducts) {
  SKIP_WITHOUT_XSMM();
  BackendInstance xsmm(default_plugins(), "xsmm");
  const DotDims dims{{1}, {0}, {}, {}};
  auto type = [](DType d, Shape s) { return Type{d, std::move(s), MemorySpace::kDevice}; };
  EXPECT_EQ(xsmm.prepare(Prim::kDotGeneral, dot_general_params(dims, DType::kF32),
                         {type(DType::kBF16, {4, 3}), type(DType::kBF16, {3, 2})}, {f32({4, 2})}, "bf16"),
            nullptr);
  EXPECT_EQ(xsmm.prepare(Prim::kDotGeneral, dot_general_params(dims), {type(DType::kF64, {4, 3}), type(DType::kF64, {3, 2})},
                         {type(DType::kF64, {4, 2})}, "f64"),
            nullptr);
  EXPECT_EQ(xsmm.prepare(Prim::kAdd, {}, {f32({4}), f32({4})}, {f32({4})}, "add"), nullptr);
  // A fused equation (its parts a product and more) is the next backend's, whatever it holds.
  EXPECT_EQ(xsmm.prepare("rk_fusion", {}, {f32({4, 3}), f32({3, 2})}, {f32({4, 2})}, "fused"), nullptr);
  // 256^3 is the largest product it claims (past it, the threaded GEMMs of other backends win).
  EXPECT_NE(xsmm.prepare(Prim::kDotGeneral, dot_general_params(dims), {f32({256, 256}), f32({256, 256})},
                         {f32({256, 256})}, "256^3"),
            nullptr);
  EXPECT_EQ(xsmm.prepare(Prim::kDotGeneral, dot_general_params(dims), {f32({257, 256}), f32({256, 256})},
                         {f32({257, 256})}, "257x256x256"),
            nullptr);
}

// Fused steps stay with the backends that run them (highway here): xsmm takes the products left
// alone, never a fused one.
TEST(XsmmBackend, FusedStepsGoToTheNextBackend) {
  SKIP_WITHOUT_XSMM();
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[4,8] b1:f32[8] w1:f32[8,8] w2:f32[8,8]. let
      a:f32[4,8] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w1
      c:f32[1,8] = reshape[new_sizes=(1, 8) dimensions=None] b1
      d:f32[4,8] = add a c
      e:f32[4,8] = relu d
      f:f32[4,8] = dot_general[dimension_numbers=(([1], [0]), ([], []))] e w2
      l:f32[] = reduce_sum[axes=(0, 1)] f
    in (l,) })",
                                        "dense");
  const Linearization lin = linearize_with(program);
  BackendOptions options{{"xsmm", "highway", "reference"}, &default_plugins()};
  const StepProgram steps = build_step_program(lin, options, Pass::kBackward, InputMode::kLoadedEachRun, FusionChoice{});
  size_t on_xsmm = 0;
  for (const Step& step : steps.steps()) {
    if (step.kind != StepKind::kKernel) continue;
    if (step.kernel->backend() == "xsmm") {
      ++on_xsmm;
      EXPECT_TRUE(step.fused.empty());
      EXPECT_EQ(lin.graph.eqns[step.equation].prim, Prim::kDotGeneral);
    }
  }
  EXPECT_GT(on_xsmm, 0u);
}

// Values in [-1, 1) from `seed`.
std::vector<float> random_floats(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

// One product run on xsmm and on reference from the same operands: the largest difference relative
// to the largest |reference| entry (at least 1e-30).
struct Case {
  DotDims dims;
  Shape lhs, rhs, out;
  std::string what;
};
double relative_difference(BackendInstance& xsmm, BackendInstance& reference, const Case& c, unsigned seed) {
  const std::vector<Type> inputs{f32(c.lhs), f32(c.rhs)};
  const std::vector<Type> outputs{f32(c.out)};
  const auto on_xsmm = xsmm.prepare(Prim::kDotGeneral, dot_general_params(c.dims), inputs, outputs, c.what);
  const auto on_reference = reference.prepare(Prim::kDotGeneral, dot_general_params(c.dims), inputs, outputs, c.what);
  if (!on_xsmm || !on_reference) {
    ADD_FAILURE() << c.what << ": not prepared on " << (on_xsmm ? "reference" : "xsmm");
    return std::numeric_limits<double>::infinity();
  }
  auto count = [](const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  const std::vector<float> a = random_floats(count(c.lhs), seed), b = random_floats(count(c.rhs), seed + 1);
  // NaN in both outputs: a kernel that reads its output before writing it shows.
  std::vector<float> got(static_cast<size_t>(count(c.out)), std::numeric_limits<float>::quiet_NaN()), want = got;
  on_xsmm->execute_allocating_workspace({a.data(), b.data()}, {got.data()});
  on_reference->execute_allocating_workspace({a.data(), b.data()}, {want.data()});
  double scale = 1e-30, diff = 0;
  for (float v : want) scale = std::max(scale, std::fabs(double(v)));
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    diff = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(diff, d);
  }
  return diff / scale;
}

// Every (m, k, n) from odd sizes, plain, with the lhs transposed, and batched (3 products, the
// batch in front): within 1e-6 of the reference backend, relative to the largest entry.
TEST(XsmmBackend, AgreesWithReferenceOnOddSizes) {
  SKIP_WITHOUT_XSMM();
  BackendInstance xsmm(default_plugins(), "xsmm"), reference(default_plugins(), "reference");
  const int64_t sizes[] = {1, 7, 33, 64, 130};
  unsigned seed = 1;
  for (int64_t m : sizes)
    for (int64_t k : sizes)
      for (int64_t n : sizes) {
        const std::string mkn = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
        const Case cases[] = {
            {DotDims{{1}, {0}, {}, {}}, {m, k}, {k, n}, {m, n}, "A B " + mkn},
            {DotDims{{0}, {0}, {}, {}}, {k, m}, {k, n}, {m, n}, "A^T B " + mkn},
            {DotDims{{2}, {1}, {0}, {0}}, {3, m, k}, {3, k, n}, {3, m, n}, "batched A B " + mkn},
            {DotDims{{1}, {1}, {0}, {0}}, {3, k, m}, {3, k, n}, {3, m, n}, "batched A^T B " + mkn},
        };
        for (const Case& c : cases) EXPECT_LE(relative_difference(xsmm, reference, c, seed += 2), 1e-6) << c.what;
      }
}

// The rhs transposed is libxsmm's TRANS_A, which 1.17 does not generate: declined at every size,
// as is a batch whose rhs is transposed.
TEST(XsmmBackend, DeclinesTheRhsTransposed) {
  SKIP_WITHOUT_XSMM();
  BackendInstance xsmm(default_plugins(), "xsmm");
  for (int64_t s : {7, 64}) {
    EXPECT_EQ(xsmm.prepare(Prim::kDotGeneral, dot_general_params(DotDims{{1}, {1}, {}, {}}), {f32({3, s}), f32({5, s})},
                           {f32({3, 5})}, "A B^T"),
              nullptr);
    EXPECT_EQ(xsmm.prepare(Prim::kDotGeneral, dot_general_params(DotDims{{0}, {1}, {}, {}}), {f32({s, 3}), f32({5, s})},
                           {f32({3, 5})}, "A^T B^T"),
              nullptr);
    EXPECT_EQ(xsmm.prepare(Prim::kDotGeneral, dot_general_params(DotDims{{2}, {2}, {0}, {0}}), {f32({2, 3, s}), f32({2, 5, s})},
                           {f32({2, 3, 5})}, "batched A B^T"),
              nullptr);
  }
}

// A kernel run from several threads at once (RK_BACKEND_THREAD_SAFE) gives the bits it gives alone.
TEST(XsmmBackend, KernelsRunOnSeveralThreadsAtOnce) {
  SKIP_WITHOUT_XSMM();
  BackendInstance xsmm(default_plugins(), "xsmm");
  const int64_t m = 33, k = 64, n = 130;
  const auto kernel = xsmm.prepare(Prim::kDotGeneral, dot_general_params(DotDims{{0}, {0}, {}, {}}), {f32({k, m}), f32({k, n})},
                                   {f32({m, n})}, "A^T B");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->workspace_bytes(), 0u);
  const std::vector<float> a = random_floats(k * m, 5), b = random_floats(k * n, 6);
  std::vector<float> alone(static_cast<size_t>(m * n));
  kernel->execute_allocating_workspace({a.data(), b.data()}, {alone.data()});
  std::vector<std::vector<float>> results(4, std::vector<float>(alone.size()));
  std::vector<int> same(results.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 50; ++run) {
        std::fill(results[t].begin(), results[t].end(), -1.0f);
        kernel->execute_allocating_workspace({a.data(), b.data()}, {results[t].data()});
        same[t] += results[t] == alone ? 1 : 0;
      }
    });
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < results.size(); ++t) EXPECT_EQ(same[t], 50) << "thread " << t;
}

// num_threads (every backend is created with the step's count) is taken and changes nothing; any
// other option is refused.
TEST(XsmmBackend, TakesNumThreadsAndNothingElse) {
  SKIP_WITHOUT_XSMM();
  Params two;
  two.set("num_threads", ParamValue::of_int(2));
  EXPECT_NO_THROW(BackendInstance(default_plugins(), "xsmm", two));
  const std::string refused =
      "backend 'xsmm' could not start: the xsmm backend takes num_threads=N (N >= 1; each product runs on one thread)";
  for (const ParamValue& bad : {ParamValue::of_int(0), ParamValue::of_string("2")}) {
    Params options;
    options.set("num_threads", bad);
    EXPECT_EQ(usage_error([&] { BackendInstance(default_plugins(), "xsmm", options); }), refused);
  }
  Params unknown;
  unknown.set("cores", ParamValue::of_int(2));
  EXPECT_EQ(usage_error([&] { BackendInstance(default_plugins(), "xsmm", unknown); }), refused);
}

}  // namespace
}  // namespace rematkit::testing
