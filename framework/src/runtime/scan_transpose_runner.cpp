#include "scan_transpose_runner.hpp"

#include <cstring>

#include "rematkit/reference_math/element_values.hpp"
#include "scan_runner.hpp"

namespace rematkit {
namespace {

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

// A residual the same every iteration, given once; the others are rows.
bool same_every_iteration(const ScanResidual& residual) {
  return residual.kind == ScanResidual::Kind::kConst || residual.kind == ScanResidual::Kind::kHoisted;
}

}  // namespace

ScanTransposeRunner::ScanTransposeRunner(const LoopProgram& loop, std::byte* workspace)
    : scan_(*loop.scan), body_(loop.bodies[0], workspace) {
  scratch_.resize(scan_carry_bytes(scan_));
  body_.allow_in_place_where_unshared();
  plan_layout();
  plan_pingpong();
}

// The layout, fixed: where each seed is among the given buffers, each argument's gradient among the
// results and its cotangent among the outputs (so a run allocates nothing).
void ScanTransposeRunner::plan_layout() {
  const ScanLinearization& s = scan_;
  outputs_.assign(s.tangent_out.size(), OutputCotangent{});
  size_t next_seed = s.residuals.size();
  for (size_t k = 0; k < s.body.cotangent_seeds.size(); ++k)
    if (s.body.cotangent_seeds[k] != kNoValue) outputs_[k].seed = next_seed++;
  arguments_.assign(s.differentiated.size(), ArgumentGradient{});
  size_t next_result = 0, next_out = 0;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (s.differentiated[i]) arguments_[i].result = next_result++;
    if (s.tangent_given[i]) arguments_[i].out = next_out++;
  }
  carries_.assign(s.num_carry, CarryCotangent{});
  for (size_t j = 0; j < s.num_carry; ++j) {
    carries_[j].seed = outputs_[j].seed;
    if (s.num_consts + j < arguments_.size()) carries_[j].gradient = arguments_[s.num_consts + j].result;
  }
  // The carries' seeds are written through scratch; the consts' and carries' gradients are read
  // across iterations. The xs' gradients and every other given may be rows.
  for (const CarryCotangent& carry : carries_)
    if (carry.seed != SIZE_MAX) body_.given_binding(carry.seed).in_place = false;
  for (size_t i = 0; i < s.num_consts + s.num_carry && i < arguments_.size(); ++i)
    if (arguments_[i].result != SIZE_MAX) body_.result_binding(arguments_[i].result).in_place = false;
}

// A carry's cotangent whose seed and gradient are buffers of their own is passed on without a copy:
// the gradient is written into one of two places of its own, alternately, and the next iteration's
// seed reads it there.
void ScanTransposeRunner::plan_pingpong() {
  size_t pingpong_bytes = 0;
  for (CarryCotangent& carry : carries_) {
    if (carry.seed == SIZE_MAX || carry.gradient == SIZE_MAX) continue;
    const int seed_buffer = body_.given_binding(carry.seed).buffer;
    const int gradient_buffer = body_.result_binding(carry.gradient).buffer;
    const size_t bytes = body_.given_binding(carry.seed).bytes;
    if (bytes % kBufferAlignment != 0 || body_.given_count(seed_buffer) != 1 || body_.result_count(seed_buffer) != 0 ||
        body_.given_count(gradient_buffer) != 0 || body_.result_count(gradient_buffer) != 1)
      continue;
    carry.pingpong_at = pingpong_bytes;
    pingpong_bytes += 2 * bytes;
    body_.given_binding(carry.seed).in_place = body_.result_binding(carry.gradient).in_place = true;
  }
  pingpong_storage_.resize(pingpong_bytes + kBufferAlignment);
  const uintptr_t base = reinterpret_cast<uintptr_t>(pingpong_storage_.data());
  pingpong_ = pingpong_storage_.data() + (kBufferAlignment - base % kBufferAlignment) % kBufferAlignment;
}

void ScanTransposeRunner::run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport) {
  transport_ = transport;
  const ScanLinearization& s = scan_;
  for (size_t k = 0; k < s.residuals.size(); ++k)
    if (same_every_iteration(s.residuals[k])) body_.give(k, in[k]);
  // Cotangent inputs: one per nonzero output tangent, in output order.
  size_t next = s.residuals.size();
  for (size_t k = 0; k < s.tangent_out.size(); ++k) outputs_[k].data = s.tangent_out[k] ? in[next++] : nullptr;
  // The carries' cotangents, flowing backwards through the iterations.
  for (size_t j = 0; j < s.num_carry; ++j) carries_[j].data = outputs_[j].data;
  for (int64_t step = s.length - 1; step >= 0; --step) {
    const int64_t r = s.row_of(step);
    give_row_residuals(in, r);
    give_seeds(step, r);
    aim_gradients(out, r);
    body_.run(transport_);
    take_gradients(out, step, r);
  }
  write_final_cotangents(out);
}

void ScanTransposeRunner::give_row_residuals(const std::vector<const void*>& in, int64_t r) {
  for (size_t k = 0; k < scan_.residuals.size(); ++k)
    if (!same_every_iteration(scan_.residuals[k])) body_.give(k, row(in[k], r, body_.given_binding(k).bytes));
}

// The carries' seeds are read where their cotangent is, or copied through scratch (a carry's
// cotangent may lie in another's seed buffer); the other outputs' seeds are rows.
void ScanTransposeRunner::give_seeds(int64_t step, int64_t r) {
  size_t at = 0;
  for (const CarryCotangent& carry : carries_) {
    if (carry.seed == SIZE_MAX || carry.pingpong_at != SIZE_MAX) continue;
    const size_t bytes = body_.given_binding(carry.seed).bytes;
    std::memcpy(scratch_.data() + at, carry.data, bytes);
    at += bytes;
  }
  at = 0;
  for (const CarryCotangent& carry : carries_) {
    if (carry.seed == SIZE_MAX) continue;
    const size_t bytes = body_.given_binding(carry.seed).bytes;
    if (carry.pingpong_at != SIZE_MAX) {
      body_.give(carry.seed, carry.data);
      body_.aim_result(carry.gradient, pingpong_ + carry.pingpong_at + (step % 2) * bytes);
      continue;
    }
    std::memcpy(body_.given(carry.seed), scratch_.data() + at, bytes);
    at += bytes;
  }
  for (size_t k = scan_.num_carry; k < outputs_.size(); ++k)
    if (outputs_[k].seed != SIZE_MAX)
      body_.give(outputs_[k].seed, row(outputs_[k].data, r, body_.given_binding(outputs_[k].seed).bytes));
}

void ScanTransposeRunner::aim_gradients(const std::vector<void*>& out, int64_t r) {
  for (size_t i = scan_.num_consts + scan_.num_carry; i < arguments_.size(); ++i) {
    const ArgumentGradient& argument = arguments_[i];
    if (argument.result != SIZE_MAX && argument.out != SIZE_MAX)
      body_.aim_result(argument.result, row(out[argument.out], r, body_.result_binding(argument.result).bytes));
  }
}

// The consts' gradients summed into their cotangents (the last iteration, run first, writes them),
// the carries' kept for the next iteration, the xs' taken into their rows.
void ScanTransposeRunner::take_gradients(const std::vector<void*>& out, int64_t step, int64_t r) {
  const ScanLinearization& s = scan_;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    const ArgumentGradient& argument = arguments_[i];
    if (argument.result == SIZE_MAX) continue;
    const void* g = body_.result(argument.result);
    const BufferBinding& gradient = body_.result_binding(argument.result);
    if (i < s.num_consts) {
      if (argument.out == SIZE_MAX) continue;
      if (step == s.length - 1) std::memcpy(out[argument.out], g, gradient.bytes);
      else accumulate(*gradient.type, out[argument.out], g);
    } else if (i < s.num_consts + s.num_carry) {
      carries_[i - s.num_consts].data = g;
    } else if (argument.out != SIZE_MAX) {
      body_.take_result(argument.result, row(out[argument.out], r, gradient.bytes));
    }
  }
}

void ScanTransposeRunner::write_final_cotangents(const std::vector<void*>& out) {
  const ScanLinearization& s = scan_;
  const Linearization& body = s.body;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    const size_t o = arguments_[i].out;
    if (o == SIZE_MAX || i >= s.num_consts + s.num_carry) continue;  // the xs' are rows, taken already
    const size_t bytes = static_cast<size_t>(body.graph.values[body.arguments[i]].type.bytes());
    if (i < s.num_consts) {
      if (s.length == 0) std::memset(out[o], 0, bytes);
    } else {
      std::memcpy(out[o], carries_[i - s.num_consts].data, bytes);
    }
  }
}

}  // namespace rematkit
