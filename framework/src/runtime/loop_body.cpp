#include "loop_body.hpp"

#include <algorithm>
#include <cstring>

namespace rematkit {
namespace {

// Whether a body's buffer may live at `data` instead of its arena place: kernels may assume an
// arena buffer's alignment, and may touch its rounded-up tail.
bool arena_like(const void* data, size_t bytes) {
  return reinterpret_cast<uintptr_t>(data) % kBufferAlignment == 0 && bytes % kBufferAlignment == 0;
}

std::vector<BufferBinding> bindings(const StepProgram& program, const std::vector<int>& buffers) {
  std::vector<BufferBinding> out;
  out.reserve(buffers.size());
  for (int buffer : buffers) {
    const Type& type = program.buffer_type(buffer);
    out.push_back(BufferBinding{buffer, &type, static_cast<size_t>(type.bytes())});
  }
  return out;
}

size_t count(const std::vector<BufferBinding>& bindings, int buffer) {
  return static_cast<size_t>(
      std::count_if(bindings.begin(), bindings.end(), [buffer](const BufferBinding& b) { return b.buffer == buffer; }));
}

}  // namespace

LoopBody::LoopBody(const BodyPass& pass, std::byte* workspace)
    : executor_(std::make_unique<StepExecutor>(*pass.program, workspace)),
      given_(bindings(*pass.program, pass.given)),
      results_(bindings(*pass.program, pass.results)) {}

size_t LoopBody::given_count(int buffer) const { return count(given_, buffer); }
size_t LoopBody::result_count(int buffer) const { return count(results_, buffer); }

void LoopBody::run(MeshTransport* transport) { executor_->run(StepIo{nullptr, nullptr, nullptr, nullptr, transport}); }

void LoopBody::allow_in_place_where_unshared() {
  for (BufferBinding& given : given_) given.in_place = given_count(given.buffer) == 1;
  for (BufferBinding& result : results_)
    result.in_place = given_count(result.buffer) == 0 && result_count(result.buffer) == 1;
}

void LoopBody::give(size_t k, const void* data) {
  const BufferBinding& given = given_binding(k);
  std::byte* at = static_cast<std::byte*>(const_cast<void*>(data));  // read only: a given is never written
  const bool in_place = given.in_place && arena_like(data, given.bytes);
  executor_->bind(given.buffer, in_place ? at : nullptr);
  if (!in_place) std::memcpy(this->given(k), data, given.bytes);
}

void LoopBody::point_given(size_t k, std::byte* at) { executor_->bind(given_binding(k).buffer, at); }

void LoopBody::aim_result(size_t k, void* data) {
  const BufferBinding& result = result_binding(k);
  if (!result.in_place) return;  // it may be a given's buffer, which stays where give() put it
  const bool in_place = arena_like(data, result.bytes);
  executor_->bind(result.buffer, in_place ? static_cast<std::byte*>(data) : nullptr);
}

void LoopBody::take_result(size_t k, void* data) const {
  if (result(k) != data) std::memcpy(data, result(k), result_binding(k).bytes);
}

std::byte* LoopBody::result_outside_arena(size_t k) const {
  const int buffer = result_binding(k).buffer;
  return executor_->in_arena(buffer) ? nullptr : executor_->data(buffer);
}

}  // namespace rematkit
