// Backend kernels through the plugin ABI, as step programs run them: GEMM (square 64^3 to 2048^3, MLP-shaped
// (B x D) x (D x F), batched) and elementwise kernels, per backend, at 1 and 2 threads. Counters:
// GFLOP/s for GEMM, GB/s (bytes read + written) for elementwise.
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <memory>
#include <string>
#include <vector>

#include "gemm_fixture.hpp"
#include "rematkit/backend_kernel.hpp"
#include "rematkit/params.hpp"

namespace {

using rematkit::BackendInstance;
using rematkit::DType;
using rematkit::MemorySpace;
using rematkit::Prim;
using rematkit::Type;
using rematkit::bench::AlignedFloats;
using rematkit::bench::AlignedWorkspace;

Type f32(std::vector<int64_t> shape) { return Type{DType::kF32, std::move(shape), MemorySpace::kDevice}; }

const std::vector<std::string> kBackends = {"reference", "highway", "onednn"};

void BM_Gemm(benchmark::State& state, const std::string& backend, int64_t batch, int64_t m, int64_t k, int64_t n) {
  rematkit::bench::run_gemm(state, backend, batch, m, k, n, static_cast<int>(state.range(0)));
}

void BM_Elementwise(benchmark::State& state, const std::string& backend, Prim prim, int64_t n) {
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(state.range(0)));
  BackendInstance instance(rematkit::default_plugins(), backend);
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

void register_all() {
  for (const std::string& backend : kBackends) {
    // The scalar reference backend is an oracle, not a contender: small shapes only.
    const std::vector<int64_t> squares = backend == "reference" ? std::vector<int64_t>{64, 128}
                                                                : std::vector<int64_t>{64, 128, 256, 512, 1024, 2048};
    for (int64_t s : squares)
      benchmark::RegisterBenchmark(("gemm/" + backend + "/" + std::to_string(s) + "^3").c_str(), BM_Gemm, backend, 0, s, s, s)
          ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
    if (backend != "reference") {
      for (auto [bsz, d, f] : {std::tuple{32, 512, 512}, std::tuple{256, 1024, 1024}})
        benchmark::RegisterBenchmark(("gemm/" + backend + "/mlp_" + std::to_string(bsz) + "x" + std::to_string(d) + "x" +
                                      std::to_string(f)).c_str(),
                                     BM_Gemm, backend, 0, bsz, d, f)
            ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("gemm/" + backend + "/batched_8x128^3").c_str(), BM_Gemm, backend, 8, 128, 128, 128)
          ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
    // 2^24 floats is 64 MiB per array, past the 32 MiB last-level cache.
    const int64_t n = backend == "reference" ? int64_t{1} << 20 : int64_t{1} << 24;
    if (backend == "onednn") continue;  // it runs dot_general only
    for (auto [name, prim] : {std::pair{"add", Prim::kAdd}, std::pair{"exp", Prim::kExp}})
      benchmark::RegisterBenchmark(("elementwise/" + backend + "/" + name + "/" + std::to_string(n)).c_str(), BM_Elementwise,
                                   backend, prim, n)
          ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
}

const int kRegistered = (register_all(), 0);

}  // namespace
