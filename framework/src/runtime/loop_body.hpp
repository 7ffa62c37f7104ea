// What every loop runner shares: a body pass (a scan's body, or one of a cond's branches) with the
// executor that runs it in the loop step's workspace, and one binding record per given and result
// buffer: where it is, its size, and whether it may be pointed at a row of a stacked operand.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../schedule/loop_program.hpp"
#include "step_executor.hpp"

namespace rematkit {

// Row `index` of a stacked operand whose rows are `row_bytes` long.
inline const std::byte* row(const void* stacked, int64_t index, size_t row_bytes) {
  return static_cast<const std::byte*>(stacked) + static_cast<size_t>(index) * row_bytes;
}
inline std::byte* row(void* stacked, int64_t index, size_t row_bytes) {
  return static_cast<std::byte*>(stacked) + static_cast<size_t>(index) * row_bytes;
}

// One given or result buffer of a body pass.
struct BufferBinding {
  int buffer = 0;  // the body program's
  const Type* type = nullptr;
  size_t bytes = 0;  // type's
  // May it be pointed at a row outside the arena (a scan runner decides: none of the carries it
  // writes or reads across iterations, and no other given or result is the same buffer)?
  bool in_place = false;
};

class LoopBody {
 public:
  // The body's arena lives in `workspace`, the loop step's buffer.
  LoopBody(const BodyPass& pass, std::byte* workspace);

  const BufferBinding& given_binding(size_t k) const { return given_.at(k); }
  const BufferBinding& result_binding(size_t k) const { return results_.at(k); }
  BufferBinding& given_binding(size_t k) { return given_.at(k); }
  BufferBinding& result_binding(size_t k) { return results_.at(k); }
  // Where given k and result k are now: their arena places, or the rows they were pointed at.
  void* given(size_t k) const { return executor_->data(given_binding(k).buffer); }
  const void* result(size_t k) const { return executor_->data(result_binding(k).buffer); }
  // How many of the body's given buffers, and how many of its results, are `buffer`.
  size_t given_count(int buffer) const;
  size_t result_count(int buffer) const;

  void run(MeshTransport* transport);

  // Marks in place each given no other given is the same buffer of (a given is only read: a runner
  // points it elsewhere before it writes a carry), and each result no given or other result is (a
  // result that is a given's buffer is copied from where the given is).
  void allow_in_place_where_unshared();
  // Given k reads `data` in place when it may, else a copy of it.
  void give(size_t k, const void* data);
  // Points given k at `at` (null: back at its arena place), copying nothing.
  void point_given(size_t k, std::byte* at);
  // Result k is written straight into `data` when it may; take_result copies it there when it was not.
  void aim_result(size_t k, void* data);
  void take_result(size_t k, void* data) const;
  // Where result k was written when that was outside the arena (a row it was aimed at), else null.
  std::byte* result_outside_arena(size_t k) const;

 private:
  std::unique_ptr<StepExecutor> executor_;
  std::vector<BufferBinding> given_, results_;
};

}  // namespace rematkit
