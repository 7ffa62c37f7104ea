// The iterations of a scan's parts (loops.py: _scan_impl for the forward and recompute scans,
// _scan_transpose for the backward one, which runs the other way and sums the consts' cotangents
// across iterations as carries).
#include "loop_runner.hpp"

#include <algorithm>
#include <cstring>

#include "../interpreter/control_flow.hpp"
#include "element_values.hpp"
#include "step_executor.hpp"

namespace rematkit {
namespace {

const std::byte* row(const void* stacked, int64_t index, size_t row_bytes) {
  return static_cast<const std::byte*>(stacked) + static_cast<size_t>(index) * row_bytes;
}

std::byte* row(void* stacked, int64_t index, size_t row_bytes) {
  return static_cast<std::byte*>(stacked) + static_cast<size_t>(index) * row_bytes;
}

// sum += term, elementwise in `type`'s dtype, rounded as the reference add rounds.
void accumulate(const Type& type, void* sum, const void* term) {
  const int code = dtype_code(type.dtype);
  for (int64_t i = 0; i < type.num_elements(); ++i) {
    const size_t k = static_cast<size_t>(i);
    reference::store_element(sum, code, k, reference::load_element(sum, code, k) + reference::load_element(term, code, k));
  }
}

}  // namespace

LoopRunner::LoopRunner(const LoopProgram& loop, std::byte* workspace) : loop_(loop) {
  for (const BodyPass& pass : loop.bodies) bodies_.push_back(std::make_unique<StepExecutor>(*pass.program, workspace));
  if (!loop.scan) return;
  const ScanLinearization& s = *loop.scan;
  size_t carry_bytes = 0;
  for (size_t j = 0; j < s.num_carry; ++j)
    carry_bytes += static_cast<size_t>(s.body.graph.values[s.body.arguments[s.num_consts + j]].type.bytes());
  scratch_.resize(carry_bytes);
  if (loop.part != ControlFlowPart::kTranspose) return;
  // The transpose's layout, fixed: where each seed is among the given buffers, each argument's
  // gradient among the results and its cotangent among the outputs (so a run allocates nothing).
  output_ct_.assign(s.tangent_out.size(), nullptr);
  carry_ct_.assign(s.num_carry, nullptr);
  seed_given_.assign(s.tangent_out.size(), SIZE_MAX);
  size_t next_seed = s.residuals.size();
  for (size_t k = 0; k < s.body.cotangent_seeds.size(); ++k)
    if (s.body.cotangent_seeds[k] != kNoValue) seed_given_[k] = next_seed++;
  const size_t n_args = s.differentiated.size();
  result_of_.assign(n_args, SIZE_MAX);
  out_of_.assign(n_args, SIZE_MAX);
  size_t next_result = 0, next_out = 0;
  for (size_t i = 0; i < n_args; ++i) {
    if (s.differentiated[i]) result_of_[i] = next_result++;
    if (s.tangent_given[i]) out_of_[i] = next_out++;
  }
}

LoopRunner::~LoopRunner() = default;

void* LoopRunner::given(size_t k, size_t body) const { return bodies_[body]->data(loop_.bodies[body].given.at(k)); }
const void* LoopRunner::result(size_t k, size_t body) const {
  return bodies_[body]->data(loop_.bodies[body].results.at(k));
}
const Type& LoopRunner::given_type(size_t k, size_t body) const {
  return loop_.bodies[body].program->buffer_type(loop_.bodies[body].given.at(k));
}
const Type& LoopRunner::result_type(size_t k, size_t body) const {
  return loop_.bodies[body].program->buffer_type(loop_.bodies[body].results.at(k));
}
size_t LoopRunner::bytes_of_given(size_t k, size_t body) const { return static_cast<size_t>(given_type(k, body).bytes()); }

void LoopRunner::run(const std::vector<const void*>& in, const std::vector<void*>& out) {
  if (loop_.cond) return loop_.part == ControlFlowPart::kTranspose ? run_cond_transpose(in, out) : run_cond_forward(in, out);
  if (!loop_.scan) return run_interpreted(in, out);
  switch (loop_.part) {
    case ControlFlowPart::kForward: return run_forward(in, out);
    case ControlFlowPart::kRecompute: return run_recompute(in, out);
    case ControlFlowPart::kTranspose: return run_transpose(in, out);
    case ControlFlowPart::kTangent: case ControlFlowPart::kNone: break;
  }
  internal_error("a scan's tangent part is transposed, never run");
}

void LoopRunner::run_interpreted(const std::vector<const void*>& in, const std::vector<void*>& out) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < in.size(); ++i) {
    const Type& type = loop_.in_types[i];
    Tensor& t = inputs.emplace_back(Tensor{type, std::vector<double>(static_cast<size_t>(type.num_elements()))});
    for (size_t k = 0; k < t.data.size(); ++k) t.data[k] = reference::load_element(in[i], dtype_code(type.dtype), k);
  }
  const std::vector<Tensor> outputs = interpreter::evaluate_control_flow(loop_.interpreted, inputs, Arithmetic::kFloat32);
  for (size_t j = 0; j < out.size(); ++j)
    for (size_t k = 0; k < outputs[j].data.size(); ++k)
      reference::store_element(out[j], dtype_code(loop_.out_types[j].dtype), k, outputs[j].data[k]);
}

// cond's index selects the branch, clamped into range as cond_p's impl clamps it.
size_t LoopRunner::branch_index(const void* index) const {
  const double raw = reference::load_element(index, dtype_code(DType::kI32), 0);
  const double last = static_cast<double>(loop_.bodies.size()) - 1;
  return static_cast<size_t>(std::clamp(raw, 0.0, last));
}

void LoopRunner::run_cond_forward(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const size_t b = branch_index(in[0]);
  const CondLinearization& c = *loop_.cond;
  const size_t n_ops = in.size() - 1;
  for (size_t i = 0; i < n_ops; ++i) std::memcpy(given(i, b), in[1 + i], bytes_of_given(i, b));
  bodies_[b]->run({});
  const size_t n_out = c.tangent_out.size();
  for (size_t k = 0; k < n_out; ++k) std::memcpy(out[k], result(k, b), static_cast<size_t>(result_type(k, b).bytes()));
  if (out.size() == n_out) return;  // no residual slots: nothing is differentiated
  // _join_cond_outputs: the slots this branch does not fill hold zeros.
  std::vector<char>& filled = filled_;
  filled.assign(c.slots.size(), 0);
  for (size_t r = 0; r < c.slot_of[b].size(); ++r) {
    const size_t slot = c.slot_of[b][r];
    filled[slot] = 1;
    std::memcpy(out[n_out + slot], result(n_out + r, b), static_cast<size_t>(c.slots[slot].bytes()));
  }
  for (size_t slot = 0; slot < c.slots.size(); ++slot)
    if (!filled[slot]) std::memset(out[n_out + slot], 0, static_cast<size_t>(c.slots[slot].bytes()));
}

void LoopRunner::run_cond_transpose(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const size_t b = branch_index(in[0]);
  const CondLinearization& c = *loop_.cond;
  const Linearization& branch = c.branches[b];
  for (size_t r = 0; r < c.slot_of[b].size(); ++r) std::memcpy(given(r, b), in[1 + c.slot_of[b][r]], bytes_of_given(r, b));
  size_t next_ct = 1 + c.slots.size(), next_seed = c.slot_of[b].size();
  if (c.operands_kept)  // inside a checkpoint: the operands, from which the branch computes again
    for (size_t i = 0; i < c.tangent_given.size(); ++i, ++next_ct, ++next_seed)
      std::memcpy(given(next_seed, b), in[next_ct], bytes_of_given(next_seed, b));
  // The output cotangents: one per nonzero output tangent of the cond; this branch seeds its own.
  for (size_t k = 0; k < c.tangent_out.size(); ++k) {
    if (!c.tangent_out[k]) continue;
    const void* ct = in[next_ct++];
    if (branch.cotangent_seeds[k] == kNoValue) continue;
    std::memcpy(given(next_seed, b), ct, bytes_of_given(next_seed, b));
    ++next_seed;
  }
  bodies_[b]->run({});
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(out[i], result(i, b), static_cast<size_t>(result_type(i, b).bytes()));
}

void LoopRunner::carry_over(size_t first_given, size_t first_result, size_t n) {
  size_t at = 0;
  for (size_t j = 0; j < n; ++j) {
    const size_t bytes = bytes_of_given(first_given + j);
    std::memcpy(scratch_.data() + at, result(first_result + j), bytes);
    at += bytes;
  }
  at = 0;
  for (size_t j = 0; j < n; ++j) {
    const size_t bytes = bytes_of_given(first_given + j);
    std::memcpy(given(first_given + j), scratch_.data() + at, bytes);
    at += bytes;
  }
}

void LoopRunner::run_forward(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const ScanLinearization& s = *loop_.scan;
  const size_t n_args = s.num_consts + s.num_carry + s.num_xs;
  for (size_t i = 0; i < s.num_consts + s.num_carry; ++i) std::memcpy(given(i), in[i], bytes_of_given(i));
  for (size_t h = 0; h < s.hoisted.size(); ++h) std::memcpy(given(n_args + h), in[n_args + h], bytes_of_given(n_args + h));
  const size_t n_rows = s.num_ys + s.saved.size();
  for (int64_t step = 0; step < s.length; ++step) {
    const int64_t r = s.row_of(step);
    for (size_t k = s.num_consts + s.num_carry; k < n_args; ++k)
      std::memcpy(given(k), row(in[k], r, bytes_of_given(k)), bytes_of_given(k));
    bodies_[0]->run({});
    for (size_t k = 0; k < n_rows; ++k) {
      const size_t at = s.num_carry + k;
      const size_t bytes = static_cast<size_t>(result_type(at).bytes());
      std::memcpy(row(out[at], r, bytes), result(at), bytes);
    }
    carry_over(s.num_consts, 0, s.num_carry);
  }
  for (size_t j = 0; j < s.num_carry; ++j) std::memcpy(out[j], given(s.num_consts + j), bytes_of_given(s.num_consts + j));
}

void LoopRunner::run_recompute(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const ScanLinearization& s = *loop_.scan;
  const size_t n_args = s.num_consts + s.num_carry + s.num_xs;
  const size_t first_saved = n_args + s.hoisted.size();
  for (size_t i = 0; i < s.num_consts + s.num_carry; ++i) std::memcpy(given(i), in[i], bytes_of_given(i));
  for (size_t h = n_args; h < first_saved; ++h) std::memcpy(given(h), in[h], bytes_of_given(h));
  for (int64_t step = 0; step < s.length; ++step) {
    const int64_t r = s.row_of(step);
    for (size_t k = s.num_consts + s.num_carry; k < n_args; ++k)
      std::memcpy(given(k), row(in[k], r, bytes_of_given(k)), bytes_of_given(k));
    for (size_t k = first_saved; k < first_saved + s.saved.size(); ++k)
      std::memcpy(given(k), row(in[k], r, bytes_of_given(k)), bytes_of_given(k));
    bodies_[0]->run({});
    for (size_t k = 0; k < s.recomputed.size(); ++k) {
      const size_t at = s.num_carry + k;
      const size_t bytes = static_cast<size_t>(result_type(at).bytes());
      std::memcpy(row(out[k], r, bytes), result(at), bytes);
    }
    carry_over(s.num_consts, 0, s.num_carry);
  }
}

void LoopRunner::run_transpose(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const ScanLinearization& s = *loop_.scan;
  const Linearization& body = s.body;
  const size_t n_res = s.residuals.size();
  // The residuals the same every iteration, once.
  for (size_t k = 0; k < n_res; ++k) {
    const ScanResidual::Kind kind = s.residuals[k].kind;
    if (kind == ScanResidual::Kind::kConst || kind == ScanResidual::Kind::kHoisted)
      std::memcpy(given(k), in[k], bytes_of_given(k));
  }
  // Cotangent inputs: one per nonzero output tangent, in output order.
  std::vector<const void*>& output_ct = output_ct_;
  size_t next = n_res;
  for (size_t k = 0; k < s.tangent_out.size(); ++k) output_ct[k] = s.tangent_out[k] ? in[next++] : nullptr;
  const std::vector<size_t>& seed_given = seed_given_;
  const std::vector<size_t>&result_of = result_of_, &out_of = out_of_;
  const size_t n_args = s.differentiated.size();
  // The carries' cotangents, flowing backwards through the iterations.
  std::vector<const void*>& carry_ct = carry_ct_;
  for (size_t j = 0; j < s.num_carry; ++j) carry_ct[j] = output_ct[j];
  for (int64_t step = s.length - 1; step >= 0; --step) {
    const int64_t r = s.row_of(step);
    for (size_t k = 0; k < n_res; ++k) {
      const ScanResidual::Kind kind = s.residuals[k].kind;
      if (kind != ScanResidual::Kind::kConst && kind != ScanResidual::Kind::kHoisted)
        std::memcpy(given(k), row(in[k], r, bytes_of_given(k)), bytes_of_given(k));
    }
    // Seeds: the carries' through scratch (a carry's cotangent may lie in another's seed buffer).
    size_t at = 0;
    for (size_t j = 0; j < s.num_carry; ++j) {
      if (seed_given[j] == SIZE_MAX) continue;
      const size_t bytes = bytes_of_given(seed_given[j]);
      std::memcpy(scratch_.data() + at, carry_ct[j], bytes);
      at += bytes;
    }
    at = 0;
    for (size_t j = 0; j < s.num_carry; ++j) {
      if (seed_given[j] == SIZE_MAX) continue;
      const size_t bytes = bytes_of_given(seed_given[j]);
      std::memcpy(given(seed_given[j]), scratch_.data() + at, bytes);
      at += bytes;
    }
    for (size_t k = s.num_carry; k < seed_given.size(); ++k)
      if (seed_given[k] != SIZE_MAX)
        std::memcpy(given(seed_given[k]), row(output_ct[k], r, bytes_of_given(seed_given[k])), bytes_of_given(seed_given[k]));
    bodies_[0]->run({});
    for (size_t i = 0; i < n_args; ++i) {
      if (result_of[i] == SIZE_MAX) continue;
      const void* g = result(result_of[i]);
      const Type& type = result_type(result_of[i]);
      const size_t bytes = static_cast<size_t>(type.bytes());
      if (i < s.num_consts) {
        if (out_of[i] == SIZE_MAX) continue;
        if (step == s.length - 1) std::memcpy(out[out_of[i]], g, bytes);
        else accumulate(type, out[out_of[i]], g);
      } else if (i < s.num_consts + s.num_carry) {
        carry_ct[i - s.num_consts] = g;
      } else if (out_of[i] != SIZE_MAX) {
        std::memcpy(row(out[out_of[i]], r, bytes), g, bytes);
      }
    }
  }
  for (size_t i = 0; i < n_args; ++i) {
    if (out_of[i] == SIZE_MAX) continue;
    if (i < s.num_consts) {
      if (s.length == 0) std::memset(out[out_of[i]], 0, static_cast<size_t>(body.graph.values[body.arguments[i]].type.bytes()));
    } else if (i < s.num_consts + s.num_carry) {
      std::memcpy(out[out_of[i]], carry_ct[i - s.num_consts],
                  static_cast<size_t>(body.graph.values[body.arguments[i]].type.bytes()));
    }
  }
}

}  // namespace rematkit
