// One GEMM through a backend plugin, as step programs run it: shared by the kernel benchmarks and the
// training-step benchmark, which compares a step's GFLOP/s with a plain oneDNN GEMM's in one run.
#pragma once
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "rematkit/backend_kernel.hpp"
#include "rematkit/primitive_params.hpp"
#include "rematkit/plugin_registry.hpp"

namespace rematkit::bench {

// 64-byte aligned floats filled with a short repeating pattern (no denormals, no zeros).
struct AlignedFloats {
  explicit AlignedFloats(size_t n)
      : data(static_cast<float*>(::operator new[](std::max<size_t>(n, 1) * sizeof(float), std::align_val_t{64}))), size(n) {
    for (size_t i = 0; i < n; ++i) data[i] = 0.5f + 0.25f * static_cast<float>(i % 7);
  }
  ~AlignedFloats() { ::operator delete[](data, std::align_val_t{64}); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data;
  size_t size;
};

// A kernel's workspace, allocated once outside the timed loop.
struct AlignedWorkspace {
  explicit AlignedWorkspace(const rematkit::PreparedKernel& kernel)
      : floats((kernel.workspace_bytes() + sizeof(float) - 1) / sizeof(float)) {}
  std::byte* data() const { return reinterpret_cast<std::byte*>(floats.data); }
  size_t size() const { return floats.size * sizeof(float); }
  AlignedFloats floats;
};

// C = A B with A (batch, m, k) and B (batch, k, n); batch 0 means a plain 2-D product, which may read
// A stored as (k, m) or B as (n, k) instead (a training step's backward products). `threads`
// bounds oneTBB and, through their num_threads option, oneDNN's OpenMP team and OpenBLAS's threads.
// Counter: GFLOP/s.
inline void run_gemm(benchmark::State& state, const std::string& backend, int64_t batch, int64_t m, int64_t k, int64_t n,
                     int threads, bool a_transposed = false, bool b_transposed = false) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
  Params options;
  if (backend == "onednn" || backend == "blas") options.set("num_threads", ParamValue::of_int(threads));
  BackendInstance instance(default_plugins(), backend, options);
  DotDims dims;
  if (batch) dims = {{2}, {1}, {0}, {0}};
  else dims = {{a_transposed ? 0 : 1}, {b_transposed ? 1 : 0}, {}, {}};
  const Params p = dot_general_params(dims);
  auto type = [&](int64_t r, int64_t c) {
    return Type{DType::kF32, batch ? std::vector<int64_t>{batch, r, c} : std::vector<int64_t>{r, c}, MemorySpace::kDevice};
  };
  auto kernel = instance.prepare(Prim::kDotGeneral, p, {a_transposed ? type(k, m) : type(m, k), b_transposed ? type(n, k) : type(k, n)},
                                 {type(m, n)}, "gemm");
  if (!kernel) {
    state.SkipWithError("the backend does not run this product");
    return;
  }
  const int64_t b = batch ? batch : 1;
  AlignedFloats a(static_cast<size_t>(b * m * k)), w(static_cast<size_t>(b * k * n)), c(static_cast<size_t>(b * m * n));
  AlignedWorkspace workspace(*kernel);  // once, as a step program's arena holds it
  for (auto _ : state) {
    kernel->execute({a.data, w.data}, {c.data}, workspace.data(), workspace.size());
    benchmark::DoNotOptimize(c.data);
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(b * m * n * k),
                                                 benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

}  // namespace rematkit::bench
