// Runs one loop step: its body's step program once per iteration, moving rows of the stacked
// operands in and out of the body's given and result buffers.
#pragma once
#include <memory>
#include <vector>

#include "loop_program.hpp"

namespace rematkit {

class StepExecutor;

class LoopRunner {
 public:
  // The body's arena lives in `workspace`, the loop step's buffer.
  LoopRunner(const LoopProgram& loop, std::byte* workspace);
  ~LoopRunner();
  void run(const std::vector<const void*>& in, const std::vector<void*>& out);

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
  // Copies the carries' new values (results [0, n)) into their given buffers [first, first + n),
  // through scratch when a result is itself a given buffer (a carry passed through or swapped).
  void carry_over(size_t first_given, size_t first_result, size_t n);

  const LoopProgram& loop_;
  std::vector<std::unique_ptr<StepExecutor>> bodies_;
  std::vector<std::byte> scratch_;  // the carries' new values, on their way to the given buffers
  // A scan transpose's fixed layout (loop_runner.cpp) and its per-run pointers, sized once.
  std::vector<size_t> seed_given_, result_of_, out_of_;
  std::vector<const void*> output_ct_, carry_ct_;
  std::vector<char> filled_;  // a cond's slots filled by the branch that ran
};

}  // namespace rematkit
