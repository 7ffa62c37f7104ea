// Backend kernels through the plugin ABI, as step programs run them: GEMM (square 64^3 to 2048^3, MLP-shaped
// (B x D) x (D x F), batched, a 768-wide gpt's products in f32 and bf16) and elementwise kernels, per installed backend, at 1 and 2 threads.
// Counters: GFLOP/s for GEMM, GB/s (bytes read + written) for elementwise. Each GEMM is registered
// on every backend next to each other, so that the backends can be set side by side in one run on a
// noisy machine: --benchmark_repetitions=N --benchmark_enable_random_interleaving=true
// --benchmark_report_aggregates_only=true interleaves the repetitions and gives their medians.
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gemm_fixture.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/ir/params.hpp"

namespace {

using rematkit::BackendInstance;
using rematkit::DType;
using rematkit::MemorySpace;
using rematkit::ParamValue;
using rematkit::Params;
using rematkit::Prim;
using rematkit::Type;
using rematkit::bench::AlignedFloats;
using rematkit::bench::AlignedWorkspace;

Type f32(std::vector<int64_t> shape) { return Type{DType::kF32, std::move(shape), MemorySpace::kDevice}; }

// The backends this build installed, of the ones compared here.
std::vector<std::string> installed_backends() {
  const std::vector<std::string> installed = rematkit::default_plugins().backend_names();
  std::vector<std::string> out;
  for (const char* b : {"reference", "highway", "onednn", "blas"})
    if (std::find(installed.begin(), installed.end(), b) != installed.end()) out.emplace_back(b);
  return out;
}

void BM_Gemm(benchmark::State& state, const std::string& backend, int64_t batch, int64_t m, int64_t k, int64_t n,
             bool a_transposed, bool b_transposed, const rematkit::bench::GemmVariant& variant) {
  rematkit::bench::run_gemm(state, backend, batch, m, k, n, static_cast<int>(state.range(0)), a_transposed, b_transposed,
                            variant);
}

void BM_Elementwise(benchmark::State& state, const std::string& backend, Prim prim, int64_t n) {
  const int threads = static_cast<int>(state.range(0));
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
  Params options;  // oneDNN's OpenMP team follows its num_threads option, not oneTBB's bound
  if (backend == "onednn") options.set("num_threads", ParamValue::of_int(threads));
  BackendInstance instance(rematkit::default_plugins(), backend, options);
  const bool binary = rematkit::is_binary_elementwise(prim);
  std::vector<Type> in(binary ? 2 : 1, f32({n}));
  auto kernel = instance.prepare(prim, {}, in, {f32({n})}, "elementwise");
  AlignedFloats x(static_cast<size_t>(n)), y(static_cast<size_t>(n)), z(static_cast<size_t>(n));
  const AlignedWorkspace workspace(*kernel);
  for (auto _ : state) {
    if (binary) kernel->execute({x.data, y.data}, {z.data}, workspace.data(), workspace.size());
    else kernel->execute({x.data}, {z.data}, workspace.data(), workspace.size());
    benchmark::DoNotOptimize(z.data);
  }
  const double bytes = 4.0 * static_cast<double>(n) * (binary ? 3 : 2);
  state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// A binary op on [rows, inner] whose second operand is spread over it: one value per row
// ([rows, 1]: a layer norm's subtraction of the mean, a softmax's of the max), or one row for all
// ([1, inner]: a bias beside NHWC's [B*H*W, C], short rows).
void BM_SpreadOperand(benchmark::State& state, const std::string& backend, Prim prim, int64_t rows, int64_t inner,
                      bool per_row) {
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(state.range(0)));
  BackendInstance instance(rematkit::default_plugins(), backend);
  const std::vector<int64_t> spread = per_row ? std::vector<int64_t>{rows, 1} : std::vector<int64_t>{1, inner};
  auto kernel = instance.prepare(prim, {}, {f32({rows, inner}), f32(spread)}, {f32({rows, inner})}, "spread operand");
  if (!kernel) return state.SkipWithError("the backend does not run it");
  AlignedFloats x(static_cast<size_t>(rows * inner)), y(static_cast<size_t>(per_row ? rows : inner)),
      z(static_cast<size_t>(rows * inner));
  const AlignedWorkspace workspace(*kernel);
  for (auto _ : state) {
    kernel->execute({x.data, y.data}, {z.data}, workspace.data(), workspace.size());
    benchmark::DoNotOptimize(z.data);
  }
}

// Dropout's bits: random_bits of one threefry key, 32-bit words (a [B, S, D] mask's worth).
void BM_RandomBits(benchmark::State& state, const std::string& backend, int64_t n) {
  BackendInstance instance(rematkit::default_plugins(), backend);
  Params params;
  params.set("bit_width", ParamValue::of_int(32));
  params.set("shape", ParamValue::of_ints({n}));
  auto kernel = instance.prepare(Prim::kRandomBits, params, {Type{DType::kKeyFry, {}, MemorySpace::kDevice}},
                                 {Type{DType::kU32, {n}, MemorySpace::kDevice}}, "random_bits");
  if (!kernel) return state.SkipWithError("the backend does not run it");
  AlignedFloats key(16), bits(static_cast<size_t>(n));
  const AlignedWorkspace workspace(*kernel);
  for (auto _ : state) {
    kernel->execute({key.data}, {bits.data}, workspace.data(), workspace.size());
    benchmark::DoNotOptimize(bits.data);
  }
  state.counters["ns/word"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                                                            benchmark::Counter::kInvert);
}

void register_gemm(const std::string& backend, const std::string& shape, int64_t batch, int64_t m, int64_t k, int64_t n,
                   bool a_transposed = false, bool b_transposed = false) {
  benchmark::RegisterBenchmark(("gemm/" + backend + "/" + shape).c_str(), BM_Gemm, backend, batch, m, k, n, a_transposed,
                               b_transposed, rematkit::bench::GemmVariant{})
      ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// The products of a gpt training step with `tokens` rows (batch x sequence) and width 768: for
// each layer's weight [in, out] (qkv 768x2304, attention out 768x768, MLP 768x3072 and 3072x768),
// the forward x W, the input's gradient dy W^T (W read transposed) and the weight's x^T dy (x read
// transposed). GPT-2 small at batch 4, sequence 512 has 2048 tokens; issue 46's 2-layer gpt 1024.
// oneDNN's transposed operands by their strides and reordered are registered beside its choice.
void register_gpt_products(int64_t tokens, const std::vector<std::string>& backends) {
  const std::string prefix = "gpt768_t" + std::to_string(tokens) + "_";
  for (auto [in, out] : {std::pair<int64_t, int64_t>{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}}) {
    const std::string io = std::to_string(in) + "x" + std::to_string(out);
    for (auto [kind, m, k, n, at, bt] : {std::tuple{"fwd_", tokens, in, out, false, false},
                                         std::tuple{"dx_nt_", tokens, out, in, false, true},
                                         std::tuple{"dw_tn_", in, tokens, out, true, false}}) {
      for (const std::string& backend : backends)
        if (backend != "reference") register_gemm(backend, prefix + kind + io, 0, m, k, n, at, bt);
      if (!at && !bt) continue;
      for (const char* how : {"strides", "reordered"}) {
        rematkit::bench::GemmVariant variant;
        variant.options.set("transposed_operands", ParamValue::of_string(how));
        benchmark::RegisterBenchmark(("gemm/onednn-" + std::string(how) + "/" + prefix + kind + io).c_str(), BM_Gemm,
                                     std::string("onednn"), int64_t{0}, m, k, n, at, bt, variant)
            ->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

// bf16 products (bf16 and f32 results) beside the f32 one of the same shape: natively where the
// CPU has AVX512_BF16, else oneDNN's f32 matmul on operands widened in the workspace.
void register_bf16_products(const std::vector<std::string>& backends) {
  for (auto [shape, m, k, n, at, bt] : {std::tuple{"256^3", 256, 256, 256, false, false},
                                        std::tuple{"gpt768_t1024_fwd_768x3072", 1024, 768, 3072, false, false},
                                        std::tuple{"gpt768_t1024_dx_nt_768x3072", 1024, 3072, 768, false, true},
                                        std::tuple{"gpt768_t1024_dw_tn_768x3072", 768, 1024, 3072, true, false}})
    for (const std::string& backend : backends)
      for (DType result : {DType::kBF16, DType::kF32}) {
        if (backend == "reference" && m > 256) continue;  // the oracle: small shapes only
        const rematkit::bench::GemmVariant variant{DType::kBF16, result};
        const std::string name = std::string("gemm_bf16") + (result == DType::kF32 ? "f32/" : "/") + backend + "/" + shape;
        benchmark::RegisterBenchmark(name.c_str(), BM_Gemm, backend, int64_t{0}, int64_t{m}, int64_t{k}, int64_t{n}, at, bt,
                                     variant)
            ->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
}

void register_all() {
  const std::vector<std::string> backends = installed_backends();
  // Shape by shape, every backend. The scalar reference backend is an oracle, not a contender:
  // small shapes only.
  for (int64_t s : {64, 128, 256, 512, 1024, 2048})
    for (const std::string& backend : backends)
      if (backend != "reference" || s <= 128) register_gemm(backend, std::to_string(s) + "^3", 0, s, s, s);
  for (auto [bsz, d, f] : {std::tuple{32, 512, 512}, std::tuple{256, 1024, 1024}})
    for (const std::string& backend : backends)
      if (backend != "reference")
        register_gemm(backend, "mlp_" + std::to_string(bsz) + "x" + std::to_string(d) + "x" + std::to_string(f), 0, bsz, d, f);
  // The MLP step's backward products at (256, 1024, 1024): dx = dy W^T and dW = x^T dy.
  for (const std::string& backend : backends)
    if (backend != "reference") register_gemm(backend, "mlp_dx_256x1024x1024_nt", 0, 256, 1024, 1024, false, true);
  for (const std::string& backend : backends)
    if (backend != "reference") register_gemm(backend, "mlp_dw_1024x256x1024_tn", 0, 1024, 256, 1024, true, false);
  for (const std::string& backend : backends)
    if (backend != "reference") register_gemm(backend, "batched_8x128^3", 8, 128, 128, 128);
  // One row times a 64x64 matrix, and the gpt default's products (B*S = 64 rows, D = 64, heads 4
  // of 16, vocabulary 128): where a small product is cheapest.
  for (auto [shape, batch, m, k, n] : {std::tuple{"row_1x64x64", 0, 1, 64, 64}, std::tuple{"gpt_qkv_64x64x192", 0, 64, 64, 192},
                                       std::tuple{"gpt_proj_64x64x64", 0, 64, 64, 64},
                                       std::tuple{"gpt_mlp_64x64x256", 0, 64, 64, 256}, std::tuple{"gpt_mlp_64x256x64", 0, 64, 256, 64},
                                       std::tuple{"gpt_scores_8x32x16x32", 8, 32, 16, 32}, std::tuple{"gpt_values_8x32x32x16", 8, 32, 32, 16}})
    for (const std::string& backend : backends)
      if (backend != "reference" && backend != "blas") register_gemm(backend, shape, batch, m, k, n);
  for (int64_t tokens : {2048, 1024}) register_gpt_products(tokens, backends);
  register_bf16_products(backends);
  // Where oneDNN's per-call cost stops mattering for elementwise kernels (the sizes a step's
  // elementwise ops have): oneDNN, Highway and (to 2^14) the reference side by side, 2^8 to 2^17
  // floats. oneDNN's size table for the ops it declines (onednn_backend.cpp) comes from these.
  for (int64_t n = 256; n <= (int64_t{1} << 17); n *= 8)
    for (auto [name, prim] : {std::pair{"add", Prim::kAdd}, std::pair{"tanh", Prim::kTanh}, std::pair{"exp", Prim::kExp}})
      for (const std::string& backend : backends)
        if (backend == "onednn" || backend == "highway" || (backend == "reference" && n <= 16384))
          benchmark::RegisterBenchmark(("elementwise/" + backend + "/" + name + "/" + std::to_string(n)).c_str(),
                                       BM_Elementwise, backend, prim, n)
              ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
  for (const std::string& backend : backends)
    if (backend == "highway" || backend == "reference")
      benchmark::RegisterBenchmark(("random_bits/" + backend + "/8192").c_str(), BM_RandomBits, backend, int64_t{8192})
          ->UseRealTime()->Unit(benchmark::kMicrosecond);
  for (auto [rows, inner] : {std::pair<int64_t, int64_t>{64, 64}, {128, 256}, {128, 768}, {512, 768}})
    for (const std::string& backend : backends)
      if (backend == "onednn" || backend == "highway")
        benchmark::RegisterBenchmark(("elementwise/" + backend + "/sub_per_row/" + std::to_string(rows) + "x" + std::to_string(inner)).c_str(),
                                     BM_SpreadOperand, backend, Prim::kSub, rows, inner, true)
            ->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
  for (auto [rows, inner] : {std::pair<int64_t, int64_t>{256, 16}, {2048, 16}, {3072, 32}, {12288, 32}})
    for (const std::string& backend : backends)
      if (backend == "onednn" || backend == "highway")
        benchmark::RegisterBenchmark(("elementwise/" + backend + "/add_each_row/" + std::to_string(rows) + "x" + std::to_string(inner)).c_str(),
                                     BM_SpreadOperand, backend, Prim::kAdd, rows, inner, false)
            ->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
  // Past the caches, where a step's largest elementwise ops lie (a [4, 12, 512, 512] attention array is
  // 2^23.6 floats): 2^24 floats is 64 MiB per array, past the 32 MiB last-level cache. oneDNN and
  // Highway side by side, for the placement estimates beyond 2^17 (their tables' last rows).
  for (int64_t n : {int64_t{1} << 20, int64_t{1} << 22, int64_t{1} << 24})
    for (const std::string& backend : backends) {
      if (backend == "blas" || (backend == "reference" && n > (int64_t{1} << 20))) continue;
      for (auto [name, prim] : {std::pair{"add", Prim::kAdd}, std::pair{"mul", Prim::kMul}, std::pair{"exp", Prim::kExp}})
        benchmark::RegisterBenchmark(("elementwise/" + backend + "/" + name + "/" + std::to_string(n)).c_str(), BM_Elementwise,
                                     backend, prim, n)
            ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
}

const int kRegistered = (register_all(), 0);

}  // namespace
