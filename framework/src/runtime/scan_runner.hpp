// Runs a scan's forward or recompute part (loops.py: _scan_impl): the body once per iteration, on
// rows of the stacked operands, read and written in place where it can (loop_body.hpp); the
// carries pass from each iteration's results to the next one's given buffers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "loop_body.hpp"

namespace rematkit {

// The bytes of a scan's carries, one after another: a runner's scratch, where carries (or their
// cotangents) wait while the given buffers they go to may still be read.
size_t scan_carry_bytes(const ScanLinearization& scan);

class ScanRunner {
 public:
  ScanRunner(const LoopProgram& loop, std::byte* workspace);
  // `transport`: the device's, where the body runs collectives on a mesh (else null).
  void run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport);

 private:
  // How carry j's new value reaches the next iteration (the stacked results, as the body's result
  // indices; SIZE_MAX where there is none).
  struct Carry {
    size_t row_result = SIZE_MAX;       // the stacked result that is the same value: written in its row
    size_t next_row_result = SIZE_MAX;  // the stacked result that is its input: written in the next row
    std::byte* in_row = nullptr;        // carry_over's: where this iteration wrote it, outside the arena
  };
  // Carry j's binding, and the in-place marks of the results it touches.
  void plan_carry(size_t j, const BodyPass& pass);
  void run_forward(const std::vector<const void*>& in, const std::vector<void*>& out);
  void run_recompute(const std::vector<const void*>& in, const std::vector<void*>& out);
  // Gives the carries' new values (results [0, num_carry)) to their given buffers: points a given at
  // its value's row when it was written in place there, else copies it, through scratch (a result
  // may itself be a given buffer: a carry passed through or swapped).
  void carry_over();

  const LoopProgram& loop_;
  const ScanLinearization& scan_;
  LoopBody body_;
  MeshTransport* transport_ = nullptr;  // this run's (run())
  std::vector<Carry> carries_;
  std::vector<std::byte> scratch_;  // the carries' new values, on their way to the given buffers
};

}  // namespace rematkit
