// The blas backend (OpenBLAS's cblas_sgemm): the products it claims agree with the interpreter, it
// declines the ones it must, it writes its output without reading it, and its thread counts (one
// number for the process in OpenBLAS) give each product the count its backend asked for. The
// conformance test runs it on every case too; these tests name the products it takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

bool has_blas() { return backend_installed("blas"); }

// Each product with the backend that must run it: blas when each operand's batch, free and
// contracted dims read as one strided dim with a unit-stride matrix dim (transposes as CblasTrans,
// batches stepped), the next backend otherwise.
const char* kProducts = R"({ lambda ; a:f32[7,13] b:f32[13,5] t:f32[13,7] u:f32[5,13] p:f32[3,5,7] q:f32[3,7,2]
    s:f32[5,3,4] w:f32[3,4,6] x:f32[2,3,4] v:f32[4,5] y:f32[2,3,5] h:f32[2,3,4,5] k:f32[2,3,6,5]
    g:f32[2,3,4,5] r:f32[5,3,4,6] z:f32[3,0] e:f32[0,4]. let
      c1:f32[7,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b
      c2:f32[7,5] = dot_general[dimension_numbers=(([0], [0]), ([], []))] t b
      c3:f32[7,5] = dot_general[dimension_numbers=(([1], [1]), ([], []))] a u
      c4:f32[7,5] = dot_general[dimension_numbers=(([0], [1]), ([], []))] t u
      c5:f32[3,5,2] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] p q
      c6:f32[3,5,6] = dot_general[dimension_numbers=(([2], [1]), ([1], [0]))] s w
      c7:f32[2,3,5] = dot_general[dimension_numbers=(([2], [0]), ([], []))] x v
      c8:f32[4,5] = dot_general[dimension_numbers=(([0, 1], [0, 1]), ([], []))] x y
      c9:f32[2,3,4,6] = dot_general[dimension_numbers=(([3], [3]), ([0, 1], [0, 1]))] h k
      d1:f32[4,5] = dot_general[dimension_numbers=(([1, 0], [1, 0]), ([], []))] x y
      d2:f32[3,2,6] = dot_general[dimension_numbers=(([2, 3], [2, 0]), ([1], [1]))] g r
      d3:f32[3,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] z e
    in (c1, c2, c3, c4, c5, c6, c7, c8, c9, d1, d2, d3) })";

TEST(BlasBackend, RunsTheProductsItClaimsAsTheInterpreterDoes) {
  if (!has_blas()) GTEST_SKIP() << "the blas backend is not built (no OpenBLAS)";
  const Program program = parse_program(kProducts, "products");
  const Linearization lin = linearize_with(program);
  const BackendOptions options{{"blas", "reference"}, &default_plugins()};
  // The plain product, the lhs, the rhs and both transposed, a batch in front and in the middle,
  // an activation times a weight and its gradient over (B, S), attention; then contracted dims
  // in an order memory does not have, a rhs whose contracted dims interleave, an empty one.
  std::vector<std::string> expected_backends(9, "blas");
  expected_backends.resize(12, "reference");
  EXPECT_EQ(forward_step_backends(lin, options), expected_backends);
  const RandomInputs in = random_inputs(program, 23, 0.25, 2.0);
  const std::vector<Tensor> expected = evaluate_program(program, in.constants, in.arguments, Arithmetic::kFloat32);
  expect_outputs_near(run_forward(lin, in.constants, in.arguments, options), expected, 1e-6);
}

// After oneDNN in a list, blas takes the products its estimate (expected_ns) says OpenBLAS runs
// faster, on any thread count (so that the bits do not depend on it): a 512x256x512 product, not a
// 64^3 one (oneDNN's is faster) nor a 2048x768x3072 one (level: oneDNN keeps it, and its fusions).
TEST(BlasBackend, AfterOnednnTakesTheProductsItRunsFaster) {
  if (!has_blas()) GTEST_SKIP() << "the blas backend is not built (no OpenBLAS)";
  if (!backend_installed("onednn")) GTEST_SKIP() << "the onednn backend is not built";
  const Program program = parse_program(R"({ lambda ; a:f32[512,256] w:f32[256,512] s:f32[64,64] t:f32[64,64]
      x:f32[2048,768] v:f32[768,3072]. let
      c1:f32[512,512] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a w
      c2:f32[64,64] = dot_general[dimension_numbers=(([1], [0]), ([], []))] s t
      c3:f32[2048,3072] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x v
    in (c1, c2, c3) })",
                                         "products");
  const Linearization lin = linearize_with(program);
  for (int threads : {1, 2}) {
    BackendOptions options{{"onednn", "blas", "reference"}, &default_plugins()};
    options.threads = threads;
    EXPECT_EQ(forward_step_backends(lin, options), (std::vector<std::string>{"blas", "onednn", "onednn"}))
        << threads << " threads";
  }
}

TEST(BlasBackend, DeclinesOtherDtypes) {
  if (!has_blas()) GTEST_SKIP() << "the blas backend is not built (no OpenBLAS)";
  BackendInstance blas(default_plugins(), "blas");
  const DotDims dims{{1}, {0}, {}, {}};
  auto type = [](DType d, Shape s) { return Type{d, std::move(s), MemorySpace::kDevice}; };
  EXPECT_EQ(blas.prepare(Prim::kDotGeneral, dot_general_params(dims, DType::kF32),
                         {type(DType::kBF16, {4, 3}), type(DType::kBF16, {3, 2})}, {type(DType::kF32, {4, 2})}, "bf16"),
            nullptr);
  EXPECT_EQ(blas.prepare(Prim::kDotGeneral, dot_general_params(dims), {type(DType::kF64, {4, 3}), type(DType::kF64, {3, 2})},
                         {type(DType::kF64, {4, 2})}, "f64"),
            nullptr);
  EXPECT_EQ(blas.prepare(Prim::kAdd, {}, {type(DType::kF32, {4}), type(DType::kF32, {4})}, {type(DType::kF32, {4})}, "add"),
            nullptr);
}

// C = A^T B for A (k, m), B (k, n) on `blas`, into `c`; the expected values in f64.
struct Product {
  static constexpr int64_t m = 150, k = 300, n = 200;  // past OpenBLAS's threshold for threading
  std::vector<float> a = values(k * m, 1), b = values(k * n, 2);
  std::vector<double> expected = std::vector<double>(m * n, 0.0);
  Product() {
    for (int64_t p = 0; p < k; ++p)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) expected[i * n + j] += double(a[p * m + i]) * double(b[p * n + j]);
  }
  static std::vector<float> values(int64_t count, int seed) {
    std::vector<float> v(static_cast<size_t>(count));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37 + seed * 11) % 17) / 8.0f - 1.0f;
    return v;
  }
  std::unique_ptr<PreparedKernel> prepare(BackendInstance& blas) const {
    const Type ta{DType::kF32, {k, m}, MemorySpace::kDevice}, tb{DType::kF32, {k, n}, MemorySpace::kDevice};
    return blas.prepare(Prim::kDotGeneral, dot_general_params(DotDims{{0}, {0}, {}, {}}), {ta, tb},
                        {Type{DType::kF32, {m, n}, MemorySpace::kDevice}}, "a^T b");
  }
  void expect_near(const std::vector<float>& c) const {
    for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], expected[i], 1e-5 * 64) << i;  // |entries| reach 64
  }
};

TEST(BlasBackend, WritesItsOutputWithoutReadingIt) {
  if (!has_blas()) GTEST_SKIP() << "the blas backend is not built (no OpenBLAS)";
  BackendInstance blas(default_plugins(), "blas");
  const Product product;
  const auto kernel = product.prepare(blas);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->workspace_bytes(), 0u);  // OpenBLAS packs into buffers of its own
  std::vector<float> c(Product::m * Product::n, std::numeric_limits<float>::quiet_NaN());  // a buffer's old contents
  kernel->execute_allocating_workspace({product.a.data(), product.b.data()}, {c.data()});
  product.expect_near(c);
}

// OpenBLAS has one thread count for the process: kernels of backends with different counts, run
// at once from several threads, give the product one kernel gives alone, bit for bit (OpenBLAS
// splits the output between its threads, never a sum, so the count changes no bit).
TEST(BlasBackend, BackendsWithDifferentThreadCountsRunAtOnce) {
  if (!has_blas()) GTEST_SKIP() << "the blas backend is not built (no OpenBLAS)";
  Params one, two;
  one.set("num_threads", ParamValue::of_int(1));
  two.set("num_threads", ParamValue::of_int(2));
  BackendInstance single(default_plugins(), "blas", one), pair(default_plugins(), "blas", two);
  const Product product;
  const auto on_one = product.prepare(single), on_two = product.prepare(pair);
  ASSERT_NE(on_one, nullptr);
  ASSERT_NE(on_two, nullptr);
  std::vector<float> reference(Product::m * Product::n);
  on_one->execute_allocating_workspace({product.a.data(), product.b.data()}, {reference.data()});
  product.expect_near(reference);
  std::vector<std::vector<float>> results(4, std::vector<float>(reference.size()));
  std::vector<int> same(results.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      const PreparedKernel& kernel = t % 2 ? *on_two : *on_one;
      for (int run = 0; run < 20; ++run) {
        std::fill(results[t].begin(), results[t].end(), -1.0f);
        kernel.execute_allocating_workspace({product.a.data(), product.b.data()}, {results[t].data()});
        same[t] += results[t] == reference ? 1 : 0;
      }
    });
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < results.size(); ++t) EXPECT_EQ(same[t], 20) << "thread " << t;
}

TEST(BlasBackend, OptionsAreChecked) {
  if (!has_blas()) GTEST_SKIP() << "the blas backend is not built (no OpenBLAS)";
  for (const ParamValue& bad : {ParamValue::of_int(0), ParamValue::of_string("2")}) {
    Params options;
    options.set("num_threads", bad);
    EXPECT_EQ(usage_error([&] { BackendInstance(default_plugins(), "blas", options); }),
              "backend 'blas' could not start: the blas backend takes num_threads=N (N >= 1)");
  }
  Params unknown;
  unknown.set("cores", ParamValue::of_int(2));
  EXPECT_EQ(usage_error([&] { BackendInstance(default_plugins(), "blas", unknown); }),
            "backend 'blas' could not start: the blas backend takes num_threads=N (N >= 1)");
}

}  // namespace
}  // namespace rematkit::testing
