// This machine's ceilings, for the backend tables: f32 FMA throughput (independent accumulator
// chains, enough to cover the FMA latency) and STREAM-triad bandwidth on arrays larger than the
// last-level cache. Compiled for AVX2+FMA and AVX-512 with target attributes, run where supported.
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <cstddef>
#include <vector>

namespace {

constexpr int kChains = 12;  // FMA latency 4 x 2 pipes, plus slack
constexpr int64_t kSteps = 1 << 16;

typedef float Vec8 __attribute__((vector_size(32)));
typedef float Vec16 __attribute__((vector_size(64)));

template <typename Vec, int kWidth>
__attribute__((always_inline)) inline float fma_chains(int64_t steps) {
  Vec acc[kChains], x, y;
  for (int i = 0; i < kWidth; ++i) x[i] = 1.0f + 1e-7f * static_cast<float>(i), y[i] = 0.999999f;
  for (int c = 0; c < kChains; ++c) acc[c] = x * static_cast<float>(c);
  for (int64_t s = 0; s < steps; ++s)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * y + x;  // contracted to one FMA (target has fma)
  float sum = 0;
  for (int c = 0; c < kChains; ++c)
    for (int i = 0; i < kWidth; ++i) sum += acc[c][i];
  return sum;
}

__attribute__((target("avx2,fma"))) float fma_avx2(int64_t steps) { return fma_chains<Vec8, 8>(steps); }
__attribute__((target("avx512f"))) float fma_avx512(int64_t steps) { return fma_chains<Vec16, 16>(steps); }

template <int kWidth>
void BM_FmaPeak(benchmark::State& state) {
  const bool ok = kWidth == 8 ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                              : __builtin_cpu_supports("avx512f");
  if (!ok) {
    state.SkipWithError("this CPU lacks the instructions");
    return;
  }
  const int threads = static_cast<int>(state.range(0));
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  for (auto _ : state) {
    tbb::parallel_for(0, threads, [](int) {
      benchmark::DoNotOptimize(kWidth == 8 ? fma_avx2(kSteps) : fma_avx512(kSteps));
    });
  }
  const double flops = 2.0 * kChains * kWidth * static_cast<double>(kSteps) * threads;
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

// a = b + s * c over 3 x 64 MiB; bytes counted as 3 per element (write-allocate not counted).
void BM_StreamTriad(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  const size_t n = size_t{1} << 24;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  for (auto _ : state) {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, n, n / 64), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t i = r.begin(); i < r.end(); ++i) a[i] = b[i] + 3.0f * c[i];
    });
    benchmark::DoNotOptimize(a.data());
  }
  state.counters["GB/s"] = benchmark::Counter(3.0 * 4 * static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

BENCHMARK(BM_FmaPeak<8>)->Name("peak/fma_avx2")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_FmaPeak<16>)->Name("peak/fma_avx512")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_StreamTriad)->Name("peak/stream_triad")->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
