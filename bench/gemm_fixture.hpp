// One GEMM through a backend plugin, as step programs run it, timed by Google Benchmark: shared by
// the kernel benchmarks and the training-step benchmark, which compares a step's GFLOP/s with a
// plain oneDNN GEMM's in one run. The product itself is gemm_kernel.hpp's.
#pragma once
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <string>

#include "gemm_kernel.hpp"

namespace rematkit::bench {

// C = A B as Gemm computes it (of `variant`'s dtypes), on `backend` alone. `threads` bounds oneTBB and, through their
// num_threads option, oneDNN's OpenMP team and OpenBLAS's threads. Counter: GFLOP/s.
inline void run_gemm(benchmark::State& state, const std::string& backend, int64_t batch, int64_t m, int64_t k, int64_t n,
                     int threads, bool a_transposed = false, bool b_transposed = false, const GemmVariant& variant = {}) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
  Gemm gemm({backend}, batch, m, k, n, threads, a_transposed, b_transposed, variant);
  if (!gemm.ok()) {
    state.SkipWithError("the backend does not run this product");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(gemm.run());
  state.counters["GFLOP/s"] =
      benchmark::Counter(gemm.flops(), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

}  // namespace rematkit::bench
