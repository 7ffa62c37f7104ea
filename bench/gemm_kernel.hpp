// One GEMM prepared on a backend plugin, as a step program runs it, with its buffers: what the
// Google Benchmark fixture (gemm_fixture.hpp) times and what step_timing sets beside a training
// step as its yardstick. Free of Google Benchmark so that plain drivers can use it.
#pragma once
#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

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

// What a product multiplies and the backend's options beyond num_threads: f32 by default; bf16
// operands with an f32 (preferred_element_type) or bf16 result; oneDNN's transposed_operands.
struct GemmVariant {
  DType operands = DType::kF32, result = DType::kF32;
  Params options = {};
};

// C = A B with A (batch, m, k) and B (batch, k, n); batch 0 means a plain 2-D product, which may read
// A stored as (k, m) or B as (n, k) instead (a training step's backward products). Prepared on the
// first backend of `backends` that runs it (ok() is false when none does). `threads` goes to the
// backends that take a num_threads option (oneDNN's OpenMP team, OpenBLAS's threads); bounding
// oneTBB is the caller's (a tbb::global_control around the runs).
class Gemm {
 public:
  Gemm(const std::vector<std::string>& backends, int64_t batch, int64_t m, int64_t k, int64_t n, int threads,
       bool a_transposed = false, bool b_transposed = false, const GemmVariant& variant = {})
      : batch_(batch ? batch : 1), m_(m), k_(k), n_(n) {
    DotDims dims;
    if (batch) dims = {{2}, {1}, {0}, {0}};
    else dims = {{a_transposed ? 0 : 1}, {b_transposed ? 1 : 0}, {}, {}};
    const Params p = variant.operands == DType::kF32 ? dot_general_params(dims) : dot_general_params(dims, variant.result);
    auto type = [&](DType dtype, int64_t r, int64_t c) {
      return Type{dtype, batch ? std::vector<int64_t>{batch, r, c} : std::vector<int64_t>{r, c}, MemorySpace::kDevice};
    };
    const DType in = variant.operands;
    const std::vector<Type> inputs{a_transposed ? type(in, k, m) : type(in, m, k), b_transposed ? type(in, n, k) : type(in, k, n)};
    for (const std::string& name : backends) {
      Params options = variant.options;
      if (name == "onednn" || name == "blas") options.set("num_threads", ParamValue::of_int(threads));
      auto instance = std::make_unique<BackendInstance>(default_plugins(), name, options);
      kernel_ = instance->prepare(Prim::kDotGeneral, p, inputs, {type(variant.result, m, n)}, "gemm");
      if (kernel_) {
        instance_ = std::move(instance);  // the kernel runs on its backend: keep both
        break;
      }
    }
    if (!kernel_) return;
    a_ = std::make_unique<AlignedFloats>(static_cast<size_t>(batch_ * m * k));
    b_ = std::make_unique<AlignedFloats>(static_cast<size_t>(batch_ * k * n));
    c_ = std::make_unique<AlignedFloats>(static_cast<size_t>(batch_ * m * n));
    workspace_ = std::make_unique<AlignedWorkspace>(*kernel_);  // once, as a step program's arena holds it
  }

  bool ok() const { return kernel_ != nullptr; }
  const std::string& backend() const { return instance_->name(); }
  double flops() const { return 2.0 * static_cast<double>(batch_ * m_ * n_ * k_); }
  // One product; returns C's first element so that a caller can keep the work observable.
  float run() {
    kernel_->execute({a_->data, b_->data}, {c_->data}, workspace_->data(), workspace_->size());
    return c_->data[0];
  }

 private:
  int64_t batch_, m_, k_, n_;
  std::unique_ptr<BackendInstance> instance_;  // declared before the kernel: destroyed after it
  std::unique_ptr<PreparedKernel> kernel_;
  std::unique_ptr<AlignedFloats> a_, b_, c_;
  std::unique_ptr<AlignedWorkspace> workspace_;
};

}  // namespace rematkit::bench
