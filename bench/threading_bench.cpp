// oneDNN (OpenMP) under oneTBB: two programs run at once, one oneTBB task each, each calling a oneDNN
// GEMM. With the backend's default (an OpenMP team of every core per call) each task brings its
// own full team, so the process runs more threads than cores; with num_threads=1 per program (what a
// scheduler running programs concurrently should pass) it runs one thread per core. Counters: total
// GFLOP/s and the threads the process has after the run (from /proc/self/status).
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "gemm_fixture.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/ir/primitive_params.hpp"

namespace {

using namespace rematkit;

double process_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stod(line.substr(8));
  return 0;
}

void BM_ConcurrentPlans(benchmark::State& state) {
  constexpr int kPlans = 2;
  constexpr int64_t kN = 512;
  const int64_t team = state.range(0);  // 0: the backend's default, every core
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, kPlans);
  Params options;
  if (team > 0) options.set("num_threads", ParamValue::of_int(team));
  const Params dims = dot_general_params(DotDims{{1}, {0}, {}, {}});
  const Type square{DType::kF32, {kN, kN}, MemorySpace::kDevice};
  std::vector<std::unique_ptr<BackendInstance>> backends;
  std::vector<std::unique_ptr<PreparedKernel>> kernels;
  for (int p = 0; p < kPlans; ++p) {
    backends.push_back(std::make_unique<BackendInstance>(default_plugins(), "onednn", options));
    kernels.push_back(backends.back()->prepare(Prim::kDotGeneral, dims, {square, square}, {square}, "gemm"));
  }
  std::vector<std::vector<float>> buffers(3 * kPlans, std::vector<float>(kN * kN, 0.5f));
  // Each plan's workspace, made once as its arena would hold it.
  std::vector<std::unique_ptr<rematkit::bench::AlignedWorkspace>> workspaces;
  for (const auto& kernel : kernels) workspaces.push_back(std::make_unique<rematkit::bench::AlignedWorkspace>(*kernel));
  for (auto _ : state) {
    tbb::parallel_for(0, kPlans, [&](int p) {
      kernels[p]->execute({buffers[3 * p].data(), buffers[3 * p + 1].data()}, {buffers[3 * p + 2].data()},
                          workspaces[p]->data(), workspaces[p]->size());
    });
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * kPlans, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
  state.counters["threads"] = process_threads();
}

BENCHMARK(BM_ConcurrentPlans)->Name("threading/two_plans_onednn_512^3/team")->Arg(1)->Arg(0)->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
