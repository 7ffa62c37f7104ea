#include "scan_runner.hpp"

#include <cstring>

#include "rematkit/ir/error.hpp"

namespace rematkit {

size_t scan_carry_bytes(const ScanLinearization& scan) {
  size_t bytes = 0;
  for (size_t j = 0; j < scan.num_carry; ++j)
    bytes += static_cast<size_t>(scan.body.graph.values[scan.body.arguments[scan.num_consts + j]].type.bytes());
  return bytes;
}

ScanRunner::ScanRunner(const LoopProgram& loop, std::byte* workspace)
    : loop_(loop), scan_(*loop.scan), body_(loop.bodies[0], workspace), carries_(loop.scan->num_carry) {
  scratch_.resize(scan_carry_bytes(scan_));
  body_.allow_in_place_where_unshared();
  for (size_t j = 0; j < carries_.size(); ++j) plan_carry(j, loop.bodies[0]);
}

// A carry's new value that is also a stacked result (the activation a layer passes on and saves) is
// written into its row, and the next iteration reads it there: no copy.
// Else, when the carry's input is a stacked result (a layer's input saved for its backward pass),
// the new value is written into the next iteration's row of that stack, where the next iteration
// reads it and finds it saved: no copy either.
void ScanRunner::plan_carry(size_t j, const BodyPass& pass) {
  const int buffer = pass.results[j], input = pass.given[scan_.num_consts + j];
  Carry& carry = carries_[j];
  body_.result_binding(j).in_place = false;
  if (body_.given_count(buffer) != 0) return;
  if (body_.result_count(buffer) == 2) {
    for (size_t a = scan_.num_carry; a < pass.results.size(); ++a)
      if (pass.results[a] == buffer) carry.row_result = a, body_.result_binding(a).in_place = true;
  } else if (body_.result_count(buffer) == 1 && body_.given_count(input) == 1) {
    for (size_t a = scan_.num_carry; a < pass.results.size() && carry.next_row_result == SIZE_MAX; ++a)
      if (pass.results[a] == input) carry.next_row_result = a, body_.result_binding(j).in_place = true;
  }
}

void ScanRunner::run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport) {
  transport_ = transport;
  switch (loop_.part) {
    case ControlFlowPart::kForward: return run_forward(in, out);
    case ControlFlowPart::kRecompute: return run_recompute(in, out);
    case ControlFlowPart::kTranspose: case ControlFlowPart::kTangent: case ControlFlowPart::kNone: break;
  }
  internal_error("a scan's tangent part is transposed, never run");
}

void ScanRunner::carry_over() {
  // A carry written into its row: the next iteration's given points there. The others are staged in
  // scratch before any given moves or is written (a result may be another carry's given buffer).
  const size_t first_given = scan_.num_consts;
  size_t at = 0;
  for (size_t j = 0; j < carries_.size(); ++j) {
    Carry& carry = carries_[j];
    carry.in_row = carry.row_result != SIZE_MAX || carry.next_row_result != SIZE_MAX ? body_.result_outside_arena(j) : nullptr;
    if (carry.in_row) continue;
    const size_t bytes = body_.given_binding(first_given + j).bytes;
    std::memcpy(scratch_.data() + at, body_.result(j), bytes);
    at += bytes;
  }
  at = 0;
  for (size_t j = 0; j < carries_.size(); ++j) {
    body_.point_given(first_given + j, carries_[j].in_row);
    if (carries_[j].in_row) continue;
    const size_t bytes = body_.given_binding(first_given + j).bytes;
    std::memcpy(body_.given(first_given + j), scratch_.data() + at, bytes);
    at += bytes;
  }
}

void ScanRunner::run_forward(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const ScanLinearization& s = scan_;
  const size_t n_args = s.num_consts + s.num_carry + s.num_xs;
  for (size_t i = 0; i < s.num_consts + s.num_carry; ++i) body_.give(i, in[i]);
  for (size_t h = 0; h < s.hoisted.size(); ++h) body_.give(n_args + h, in[n_args + h]);
  const size_t n_rows = s.num_ys + s.saved.size();
  for (int64_t step = 0; step < s.length; ++step) {
    const int64_t r = s.row_of(step);
    for (size_t k = s.num_consts + s.num_carry; k < n_args; ++k) body_.give(k, row(in[k], r, body_.given_binding(k).bytes));
    for (size_t at = s.num_carry; at < s.num_carry + n_rows; ++at)
      body_.aim_result(at, row(out[at], r, body_.result_binding(at).bytes));
    for (size_t j = 0; j < s.num_carry; ++j) {
      const size_t a = carries_[j].next_row_result;
      if (a == SIZE_MAX) continue;
      // The last iteration's: straight into the final carry.
      body_.aim_result(j, step + 1 < s.length ? row(out[a], s.row_of(step + 1), body_.result_binding(a).bytes) : out[j]);
    }
    body_.run(transport_);
    for (size_t at = s.num_carry; at < s.num_carry + n_rows; ++at)
      body_.take_result(at, row(out[at], r, body_.result_binding(at).bytes));
    carry_over();
  }
  for (size_t j = 0; j < s.num_carry; ++j) {
    const size_t k = s.num_consts + j;
    if (out[j] != body_.given(k)) std::memcpy(out[j], body_.given(k), body_.given_binding(k).bytes);
  }
}

void ScanRunner::run_recompute(const std::vector<const void*>& in, const std::vector<void*>& out) {
  const ScanLinearization& s = scan_;
  const size_t n_args = s.num_consts + s.num_carry + s.num_xs;
  const size_t first_saved = n_args + s.hoisted.size();
  for (size_t i = 0; i < s.num_consts + s.num_carry; ++i) body_.give(i, in[i]);
  for (size_t h = n_args; h < first_saved; ++h) body_.give(h, in[h]);
  for (int64_t step = 0; step < s.length; ++step) {
    const int64_t r = s.row_of(step);
    for (size_t k = s.num_consts + s.num_carry; k < n_args; ++k) body_.give(k, row(in[k], r, body_.given_binding(k).bytes));
    for (size_t k = first_saved; k < first_saved + s.saved.size(); ++k)
      body_.give(k, row(in[k], r, body_.given_binding(k).bytes));
    for (size_t k = 0; k < s.recomputed.size(); ++k) {
      const size_t at = s.num_carry + k;
      body_.aim_result(at, row(out[k], r, body_.result_binding(at).bytes));
    }
    for (size_t j = 0; j < s.num_carry; ++j) {
      const size_t a = carries_[j].next_row_result;
      if (a == SIZE_MAX) continue;
      std::byte* next = nullptr;  // after the last iteration the carry is not wanted: its arena place
      if (step + 1 < s.length) next = row(out[a - s.num_carry], s.row_of(step + 1), body_.result_binding(a).bytes);
      body_.aim_result(j, next);
    }
    body_.run(transport_);
    for (size_t k = 0; k < s.recomputed.size(); ++k) {
      const size_t at = s.num_carry + k;
      body_.take_result(at, row(out[k], r, body_.result_binding(at).bytes));
    }
    carry_over();
  }
}

}  // namespace rematkit
