// The iterations of a scan's parts (loops.py: _scan_impl for the forward and recompute scans,
// _scan_transpose for the backward one, which runs the other way and sums the consts' cotangents
// across iterations as carries).
#include "loop_runner.hpp"

#include <algorithm>
#include <cstring>

#include "../interpreter/control_flow.hpp"
#include "rematkit/reference_math/element_values.hpp"
#include "step_executor.hpp"

namespace rematkit {
namespace {

const std::byte* row(const void* stacked, int64_t index, size_t row_bytes) {
  return static_cast<const std::byte*>(stacked) + static_cast<size_t>(index) * row_bytes;
}

std::byte* row(void* stacked, int64_t index, size_t row_bytes) {
  return static_cast<std::byte*>(stacked) + static_cast<size_t>(index) * row_bytes;
}

// Whether a body's buffer may live at `data` instead of its arena place: kernels may assume an
// arena buffer's alignment, and may touch its rounded-up tail.
bool arena_like(const void* data, size_t bytes) {
  return reinterpret_cast<uintptr_t>(data) % kBufferAlignment == 0 && bytes % kBufferAlignment == 0;
}

template <typename T>
void add_into(T* sum, const T* term, int64_t n) {
  for (int64_t i = 0; i < n; ++i) sum[i] += term[i];
}

// sum += term, elementwise in `type`'s dtype, rounded as the reference add rounds (a float sum
// rounded from double is the float sum: double holds it exactly).
void accumulate(const Type& type, void* sum, const void* term) {
  if (is_complex(type.dtype)) {  // a complex sum adds each part: the part dtype's elements, twice as many
    Type parts{complex_part_dtype(type.dtype), {2 * type.num_elements()}, type.space};
    return accumulate(parts, sum, term);
  }
  if (type.dtype == DType::kF32) return add_into(static_cast<float*>(sum), static_cast<const float*>(term), type.num_elements());
  if (type.dtype == DType::kF64) return add_into(static_cast<double*>(sum), static_cast<const double*>(term), type.num_elements());
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
  const BodyPass& pass = loop.bodies[0];
  const auto count = [](const std::vector<int>& buffers, int buffer) { return std::count(buffers.begin(), buffers.end(), buffer); };
  // A given is only read (the runner points it elsewhere before it writes a carry), so it may be a
  // row whenever no other given is the same buffer; a result may be one when no given or other
  // result is the same buffer (a result that is a given's buffer is copied from where the given is).
  given_in_place_.assign(pass.given.size(), 0);
  result_in_place_.assign(pass.results.size(), 0);
  for (size_t k = 0; k < pass.given.size(); ++k) given_in_place_[k] = count(pass.given, pass.given[k]) == 1;
  for (size_t k = 0; k < pass.results.size(); ++k)
    result_in_place_[k] = count(pass.given, pass.results[k]) == 0 && count(pass.results, pass.results[k]) == 1;
  if (loop.part != ControlFlowPart::kTranspose) {
    // A carry's new value that is also a stacked result (the activation a layer passes on and saves)
    // is written into its row, and the next iteration reads it there: no copy.
    // Else, when the carry's input is a stacked result (a layer's input saved for its backward
    // pass), the new value is written into the next iteration's row of that stack, where the next
    // iteration reads it and finds it saved: no copy either.
    carry_row_.assign(s.num_carry, SIZE_MAX);
    carry_next_row_.assign(s.num_carry, SIZE_MAX);
    for (size_t j = 0; j < s.num_carry; ++j) {
      const int buffer = pass.results[j], input = pass.given[s.num_consts + j];
      result_in_place_[j] = 0;
      if (count(pass.given, buffer) != 0) continue;
      if (count(pass.results, buffer) == 2) {
        for (size_t a = s.num_carry; a < pass.results.size(); ++a)
          if (pass.results[a] == buffer) carry_row_[j] = a, result_in_place_[a] = 1;
      } else if (count(pass.results, buffer) == 1 && count(pass.given, input) == 1) {
        for (size_t a = s.num_carry; a < pass.results.size() && carry_next_row_[j] == SIZE_MAX; ++a)
          if (pass.results[a] == input) carry_next_row_[j] = a, result_in_place_[j] = 1;
      }
    }
    return;
  }
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
  // The carries' seeds are written through scratch; the consts' and carries' gradients are read
  // across iterations. The xs' gradients and every other given may be rows.
  for (size_t j = 0; j < s.num_carry; ++j)
    if (seed_given_[j] != SIZE_MAX) given_in_place_[seed_given_[j]] = 0;
  for (size_t i = 0; i < s.num_consts + s.num_carry && i < n_args; ++i)
    if (result_of_[i] != SIZE_MAX) result_in_place_[result_of_[i]] = 0;
  // A carry's cotangent whose seed and gradient are buffers of their own is passed on without a
  // copy: the gradient is written into one of two places of its own, alternately, and the next
  // iteration's seed reads it there.
  pingpong_at_.assign(s.num_carry, SIZE_MAX);
  size_t pingpong_bytes = 0;
  for (size_t j = 0; j < s.num_carry && s.num_consts + j < n_args; ++j) {
    const size_t seed = seed_given_[j], gradient = result_of_[s.num_consts + j];
    if (seed == SIZE_MAX || gradient == SIZE_MAX) continue;
    const int seed_buffer = pass.given[seed], gradient_buffer = pass.results[gradient];
    const size_t bytes = bytes_of_given(seed);
    if (bytes % kBufferAlignment != 0 || count(pass.given, seed_buffer) != 1 || count(pass.results, seed_buffer) != 0 ||
        count(pass.given, gradient_buffer) != 0 || count(pass.results, gradient_buffer) != 1)
      continue;
    pingpong_at_[j] = pingpong_bytes;
    pingpong_bytes += 2 * bytes;
    given_in_place_[seed] = result_in_place_[gradient] = 1;
  }
  pingpong_storage_.resize(pingpong_bytes + kBufferAlignment);
  const uintptr_t base = reinterpret_cast<uintptr_t>(pingpong_storage_.data());
  pingpong_ = pingpong_storage_.data() + (kBufferAlignment - base % kBufferAlignment) % kBufferAlignment;
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

void LoopRunner::run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport) {
  transport_ = transport;
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
    inputs.push_back(read_buffer(loop_.in_types[i], in[i]));
  }
  const std::vector<Tensor> outputs = interpreter::evaluate_control_flow(loop_.interpreted, inputs, Arithmetic::kFloat32);
  for (size_t j = 0; j < out.size(); ++j) write_buffer(outputs[j], out[j]);
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
  bodies_[b]->run(StepIo{nullptr, nullptr, nullptr, nullptr, transport_});
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
  bodies_[b]->run(StepIo{nullptr, nullptr, nullptr, nullptr, transport_});
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(out[i], result(i, b), static_cast<size_t>(result_type(i, b).bytes()));
}

void LoopRunner::give(size_t k, const void* data) {
  const size_t bytes = bytes_of_given(k);
  std::byte* at = static_cast<std::byte*>(const_cast<void*>(data));  // read only: a given is never written
  const bool in_place = given_in_place_[k] && arena_like(data, bytes);
  bodies_[0]->bind(loop_.bodies[0].given[k], in_place ? at : nullptr);
  if (!in_place) std::memcpy(given(k), data, bytes);
}

void LoopRunner::aim_result(size_t k, void* data) {
  if (!result_in_place_[k]) return;  // it may be a given's buffer, which stays where give() put it
  const bool in_place = arena_like(data, static_cast<size_t>(result_type(k).bytes()));
  bodies_[0]->bind(loop_.bodies[0].results[k], in_place ? static_cast<std::byte*>(data) : nullptr);
}

void LoopRunner::take_result(size_t k, void* data) const {
  if (result(k) != data) std::memcpy(data, result(k), static_cast<size_t>(result_type(k).bytes()));
}

void LoopRunner::carry_over(size_t first_given, size_t first_result, size_t n) {
  // A carry written into its row: the next iteration's given points there. The others are staged in
  // scratch before any given moves or is written (a result may be another carry's given buffer).
  std::vector<std::byte*>& in_row = carried_in_row_;
  in_row.assign(n, nullptr);
  size_t at = 0;
  for (size_t j = 0; j < n; ++j) {
    const int buffer = loop_.bodies[0].results[first_result + j];
    if ((carry_row_[j] != SIZE_MAX || carry_next_row_[j] != SIZE_MAX) && !bodies_[0]->in_arena(buffer)) {
      in_row[j] = bodies_[0]->data(buffer);
      continue;
    }
    const size_t bytes = bytes_of_given(first_given + j);
    std::memcpy(scratch_.data() + at, result(first_result + j), bytes);
    at += bytes;
  }
  at = 0;
  for (size_t j = 0; j < n; ++j) {
    bodies_[0]->bind(loop_.bodies[0].given[first_given + j], in_row[j]);
    if (in_row[j]) continue;
    const size_t bytes = bytes_of_given(first_given + j);
    std::memcpy(given(first_given + j), scratch_.data() + at, bytes);
    at += bytes;
  }
}

void LoopRunner::run_forward(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const ScanLinearization& s = *loop_.scan;
  const size_t n_args = s.num_consts + s.num_carry + s.num_xs;
  for (size_t i = 0; i < s.num_consts + s.num_carry; ++i) give(i, in[i]);
  for (size_t h = 0; h < s.hoisted.size(); ++h) give(n_args + h, in[n_args + h]);
  const size_t n_rows = s.num_ys + s.saved.size();
  for (int64_t step = 0; step < s.length; ++step) {
    const int64_t r = s.row_of(step);
    for (size_t k = s.num_consts + s.num_carry; k < n_args; ++k) give(k, row(in[k], r, bytes_of_given(k)));
    for (size_t at = s.num_carry; at < s.num_carry + n_rows; ++at)
      aim_result(at, row(out[at], r, static_cast<size_t>(result_type(at).bytes())));
    for (size_t j = 0; j < s.num_carry; ++j) {
      const size_t a = carry_next_row_[j];
      if (a == SIZE_MAX) continue;
      // The last iteration's: straight into the final carry.
      aim_result(j, step + 1 < s.length ? row(out[a], s.row_of(step + 1), static_cast<size_t>(result_type(a).bytes())) : out[j]);
    }
    bodies_[0]->run(StepIo{nullptr, nullptr, nullptr, nullptr, transport_});
    for (size_t at = s.num_carry; at < s.num_carry + n_rows; ++at)
      take_result(at, row(out[at], r, static_cast<size_t>(result_type(at).bytes())));
    carry_over(s.num_consts, 0, s.num_carry);
  }
  for (size_t j = 0; j < s.num_carry; ++j)
    if (out[j] != given(s.num_consts + j)) std::memcpy(out[j], given(s.num_consts + j), bytes_of_given(s.num_consts + j));
}

void LoopRunner::run_recompute(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const ScanLinearization& s = *loop_.scan;
  const size_t n_args = s.num_consts + s.num_carry + s.num_xs;
  const size_t first_saved = n_args + s.hoisted.size();
  for (size_t i = 0; i < s.num_consts + s.num_carry; ++i) give(i, in[i]);
  for (size_t h = n_args; h < first_saved; ++h) give(h, in[h]);
  for (int64_t step = 0; step < s.length; ++step) {
    const int64_t r = s.row_of(step);
    for (size_t k = s.num_consts + s.num_carry; k < n_args; ++k) give(k, row(in[k], r, bytes_of_given(k)));
    for (size_t k = first_saved; k < first_saved + s.saved.size(); ++k) give(k, row(in[k], r, bytes_of_given(k)));
    for (size_t k = 0; k < s.recomputed.size(); ++k) {
      const size_t at = s.num_carry + k;
      aim_result(at, row(out[k], r, static_cast<size_t>(result_type(at).bytes())));
    }
    for (size_t j = 0; j < s.num_carry; ++j) {
      const size_t a = carry_next_row_[j];
      if (a == SIZE_MAX) continue;
      std::byte* next = nullptr;  // after the last iteration the carry is not wanted: its arena place
      if (step + 1 < s.length) next = row(out[a - s.num_carry], s.row_of(step + 1), static_cast<size_t>(result_type(a).bytes()));
      aim_result(j, next);
    }
    bodies_[0]->run(StepIo{nullptr, nullptr, nullptr, nullptr, transport_});
    for (size_t k = 0; k < s.recomputed.size(); ++k) {
      const size_t at = s.num_carry + k;
      take_result(at, row(out[k], r, static_cast<size_t>(result_type(at).bytes())));
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
    if (kind == ScanResidual::Kind::kConst || kind == ScanResidual::Kind::kHoisted) give(k, in[k]);
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
      if (kind != ScanResidual::Kind::kConst && kind != ScanResidual::Kind::kHoisted) give(k, row(in[k], r, bytes_of_given(k)));
    }
    // Seeds: the carries' read where their cotangent is, or copied through scratch (a carry's
    // cotangent may lie in another's seed buffer).
    size_t at = 0;
    for (size_t j = 0; j < s.num_carry; ++j) {
      if (seed_given[j] == SIZE_MAX || pingpong_at_[j] != SIZE_MAX) continue;
      const size_t bytes = bytes_of_given(seed_given[j]);
      std::memcpy(scratch_.data() + at, carry_ct[j], bytes);
      at += bytes;
    }
    at = 0;
    for (size_t j = 0; j < s.num_carry; ++j) {
      if (seed_given[j] == SIZE_MAX) continue;
      const size_t bytes = bytes_of_given(seed_given[j]);
      if (pingpong_at_[j] != SIZE_MAX) {
        give(seed_given[j], carry_ct[j]);
        aim_result(result_of[s.num_consts + j], pingpong_ + pingpong_at_[j] + (step % 2) * bytes);
        continue;
      }
      std::memcpy(given(seed_given[j]), scratch_.data() + at, bytes);
      at += bytes;
    }
    for (size_t k = s.num_carry; k < seed_given.size(); ++k)
      if (seed_given[k] != SIZE_MAX) give(seed_given[k], row(output_ct[k], r, bytes_of_given(seed_given[k])));
    for (size_t i = s.num_consts + s.num_carry; i < n_args; ++i)
      if (result_of[i] != SIZE_MAX && out_of[i] != SIZE_MAX)
        aim_result(result_of[i], row(out[out_of[i]], r, static_cast<size_t>(result_type(result_of[i]).bytes())));
    bodies_[0]->run(StepIo{nullptr, nullptr, nullptr, nullptr, transport_});
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
        take_result(result_of[i], row(out[out_of[i]], r, bytes));
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
