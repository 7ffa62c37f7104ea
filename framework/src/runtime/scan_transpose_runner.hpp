// Runs a scan's transpose part (loops.py: _scan_transpose): the body's backward pass once per
// iteration, in the other direction, on rows of the residuals and of the cotangents; the consts'
// cotangents are summed across iterations and the carries' flow from each iteration to the next.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "loop_body.hpp"

namespace rematkit {

class ScanTransposeRunner {
 public:
  ScanTransposeRunner(const LoopProgram& loop, std::byte* workspace);
  void run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport);

 private:
  // Per output of the body: its cotangent's seed among the given buffers (SIZE_MAX: a zero tangent
  // seeds nothing), and this run's cotangent input (null where the tangent is zero).
  struct OutputCotangent {
    size_t seed = SIZE_MAX;
    const void* data = nullptr;
  };
  // Per argument of the body: its gradient among the results and its cotangent among the step's
  // outputs (SIZE_MAX: none).
  struct ArgumentGradient {
    size_t result = SIZE_MAX;
    size_t out = SIZE_MAX;
  };
  // Per carry: where its cotangent flows between iterations.
  struct CarryCotangent {
    size_t seed = SIZE_MAX;      // its seed among the given buffers
    size_t gradient = SIZE_MAX;  // its gradient among the results
    // Its two places in pingpong_, when its seed and gradient are buffers of their own, or SIZE_MAX.
    size_t pingpong_at = SIZE_MAX;
    const void* data = nullptr;  // this iteration's cotangent
  };

  void plan_layout();
  void plan_pingpong();
  // One iteration's parts, on row r of the stacked operands.
  void give_row_residuals(const std::vector<const void*>& in, int64_t r);
  void give_seeds(int64_t step, int64_t r);
  void aim_gradients(const std::vector<void*>& out, int64_t r);
  void take_gradients(const std::vector<void*>& out, int64_t step, int64_t r);
  // After the last iteration: the consts' cotangents of an empty scan and the carries'.
  void write_final_cotangents(const std::vector<void*>& out);

  const ScanLinearization& scan_;
  LoopBody body_;
  MeshTransport* transport_ = nullptr;  // this run's (run())
  std::vector<OutputCotangent> outputs_;
  std::vector<ArgumentGradient> arguments_;
  std::vector<CarryCotangent> carries_;
  std::vector<std::byte> scratch_;  // the carries' cotangents, on their way to the seeds
  std::vector<std::byte> pingpong_storage_;
  std::byte* pingpong_ = nullptr;  // aligned as the arena's buffers
};

}  // namespace rematkit
