// Runs one loop step: its body's step program once per iteration, on rows of the stacked operands:
// the body reads and writes them in place where it can (a row aligned and sized as the arena's
// buffers), else they are copied in and out of its given and result buffers.
#pragma once
#include <memory>
#include <vector>

#include "../schedule/loop_program.hpp"
#include "rematkit/interpreter/mesh_transport.hpp"

namespace rematkit {

class StepExecutor;

class LoopRunner {
 public:
  // The body's arena lives in `workspace`, the loop step's buffer.
  LoopRunner(const LoopProgram& loop, std::byte* workspace);
  ~LoopRunner();
  // `transport`: the device's, where the body runs collectives on a mesh (else null).
  void run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport);

 private:
  void run_forward(const std::vector<const void*>& in, const std::vector<void*>& out);
  void run_recompute(const std::vector<const void*>& in, const std::vector<void*>& out);
  void run_interpreted(const std::vector<const void*>& in, const std::vector<void*>& out);
  void run_transpose(const std::vector<const void*>& in, const std::vector<void*>& out);
  void run_cond_forward(const std::vector<const void*>& in, const std::vector<void*>& out);
  void run_cond_transpose(const std::vector<const void*>& in, const std::vector<void*>& out);
  size_t branch_index(const void* index) const;
  // Body `body`'s given buffer k, result k and their types (a scan has one body; a cond one per branch).
  void* given(size_t k, size_t body = 0) const;
  const void* result(size_t k, size_t body = 0) const;
  const Type& given_type(size_t k, size_t body = 0) const;
  const Type& result_type(size_t k, size_t body = 0) const;
  size_t bytes_of_given(size_t k, size_t body = 0) const;
  // Gives the carries' new values (results [0, n)) to their given buffers [first, first + n): points
  // a given at its value's row when it was written in place there, else copies it, through scratch
  // (a result may itself be a given buffer: a carry passed through or swapped).
  void carry_over(size_t first_given, size_t first_result, size_t n);
  // A scan body's given k reads `data` in place when it may, else a copy of it; result k is written
  // straight into `data` when it may, and take_result copies it there when it was not.
  void give(size_t k, const void* data);
  void aim_result(size_t k, void* data);
  void take_result(size_t k, void* data) const;

  const LoopProgram& loop_;
  MeshTransport* transport_ = nullptr;  // this run's (run())
  std::vector<std::unique_ptr<StepExecutor>> bodies_;
  std::vector<std::byte> scratch_;  // the carries' new values, on their way to the given buffers
  // A scan transpose's fixed layout (loop_runner.cpp) and its per-run pointers, sized once.
  std::vector<size_t> seed_given_, result_of_, out_of_;
  std::vector<const void*> output_ct_, carry_ct_;
  std::vector<char> filled_;  // a cond's slots filled by the branch that ran
  // Per given and result of a scan body: may it be pointed at a row (it is none of the carries the
  // runner writes or reads across iterations, and no other given or result is the same buffer)?
  std::vector<char> given_in_place_, result_in_place_;
  std::vector<size_t> carry_row_;            // per carry: the stacked result that is the same value, or SIZE_MAX
  std::vector<size_t> carry_next_row_;       // per carry: the stacked result that is its input, or SIZE_MAX
  // A transpose's carries' cotangents: per carry, its two places in pingpong_ (or SIZE_MAX).
  std::vector<size_t> pingpong_at_;
  std::vector<std::byte> pingpong_storage_;
  std::byte* pingpong_ = nullptr;            // aligned as the arena's buffers
  std::vector<std::byte*> carried_in_row_;   // carry_over's, sized once
};

}  // namespace rematkit
