#include "cond_runner.hpp"

#include <algorithm>
#include <cstring>

#include "rematkit/reference_math/element_values.hpp"

namespace rematkit {

CondRunner::CondRunner(const LoopProgram& loop, std::byte* workspace) : loop_(loop), cond_(*loop.cond) {
  branches_.reserve(loop.bodies.size());
  for (const BodyPass& pass : loop.bodies) branches_.emplace_back(pass, workspace);
}

void CondRunner::run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport) {
  if (loop_.part == ControlFlowPart::kTranspose) return run_transpose(in, out, transport);
  run_forward(in, out, transport);
}

// cond's index selects the branch, clamped into range as cond_p's impl clamps it.
size_t CondRunner::branch_index(const void* index) const {
  const double raw = reference::load_element(index, dtype_code(DType::kI32), 0);
  const double last = static_cast<double>(branches_.size()) - 1;
  return static_cast<size_t>(std::clamp(raw, 0.0, last));
}

void CondRunner::run_forward(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport) {
  const size_t b = branch_index(in[0]);
  LoopBody& branch = branches_[b];
  const CondLinearization& c = cond_;
  const size_t n_ops = in.size() - 1;
  for (size_t i = 0; i < n_ops; ++i) std::memcpy(branch.given(i), in[1 + i], branch.given_binding(i).bytes);
  branch.run(transport);
  const size_t n_out = c.tangent_out.size();
  for (size_t k = 0; k < n_out; ++k) std::memcpy(out[k], branch.result(k), branch.result_binding(k).bytes);
  if (out.size() == n_out) return;  // no residual slots: nothing is differentiated
  // _join_cond_outputs: the slots this branch does not fill hold zeros.
  filled_.assign(c.slots.size(), 0);
  for (size_t r = 0; r < c.slot_of[b].size(); ++r) {
    const size_t slot = c.slot_of[b][r];
    filled_[slot] = 1;
    std::memcpy(out[n_out + slot], branch.result(n_out + r), static_cast<size_t>(c.slots[slot].bytes()));
  }
  for (size_t slot = 0; slot < c.slots.size(); ++slot)
    if (!filled_[slot]) std::memset(out[n_out + slot], 0, static_cast<size_t>(c.slots[slot].bytes()));
}

void CondRunner::run_transpose(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport) {
  const size_t b = branch_index(in[0]);
  LoopBody& branch = branches_[b];
  const CondLinearization& c = cond_;
  const Linearization& linearized = c.branches[b];
  for (size_t r = 0; r < c.slot_of[b].size(); ++r)
    std::memcpy(branch.given(r), in[1 + c.slot_of[b][r]], branch.given_binding(r).bytes);
  size_t next_ct = 1 + c.slots.size(), next_seed = c.slot_of[b].size();
  if (c.operands_kept)  // inside a checkpoint: the operands, from which the branch computes again
    for (size_t i = 0; i < c.tangent_given.size(); ++i, ++next_ct, ++next_seed)
      std::memcpy(branch.given(next_seed), in[next_ct], branch.given_binding(next_seed).bytes);
  // The output cotangents: one per nonzero output tangent of the cond; this branch seeds its own.
  for (size_t k = 0; k < c.tangent_out.size(); ++k) {
    if (!c.tangent_out[k]) continue;
    const void* ct = in[next_ct++];
    if (linearized.cotangent_seeds[k] == kNoValue) continue;
    std::memcpy(branch.given(next_seed), ct, branch.given_binding(next_seed).bytes);
    ++next_seed;
  }
  branch.run(transport);
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(out[i], branch.result(i), branch.result_binding(i).bytes);
}

}  // namespace rematkit
