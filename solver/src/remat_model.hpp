// The budget solver's view of a program: the equations a checkpoint's policy decides (candidates),
// which of them the backward pass reads directly, which feed which, and a linear model of the
// device bytes live in each segment of the step (the forward pass; each checkpoint's backward pass),
// calibrated on the planner's verdicts. Checkmate's formulation (Jain et al., MLSys 2020) restricted
// to what a JAX policy can say: one save-or-recompute answer per equation, recomputation where the
// reverse pass reaches its checkpoint (jax/_src/interpreters/partial_eval.py, remat partial eval).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner_judge.hpp"
#include "rematkit/linearize.hpp"

namespace rematkit::solver {

struct Candidate {
  int eqn = -1;          // in the flat graph
  std::string site, primitive, signature;
  std::string type;  // its outputs' types, as messages list them
  SourceLocation where;
  int region = 0;        // its outermost checkpoint
  int64_t bytes = 0;     // its outputs, aligned as buffers are
  double flops = 0.0;
  bool read_by_backward = false;  // a backward equation of its checkpoint reads an output
  std::vector<int> reads;         // candidates of the same checkpoint whose outputs it reads
};

// Candidates in program order.
std::vector<Candidate> find_candidates(const Linearization& lin);

// What a decision per candidate (saved or not) does under JAX's rules: which outputs are kept as
// residuals and which the backward pass computes again (the closure over recomputed inputs).
struct Effects {
  std::vector<char> needed, kept, recomputed;
};
Effects effects_of(const std::vector<Candidate>& candidates, const std::vector<char>& saved);

// The device bytes live in one segment of the step, as a linear function of the effects.
struct SegmentModel {
  SegmentKey key;
  std::vector<char> counts_kept;        // per candidate: its residual is alive in this segment
  std::vector<char> counts_recomputed;  // per candidate: its recomputation is alive in this segment
  int64_t base = 0;                     // everything else (params, gradients, cotangents, ...)
  int64_t modelled(const Effects& effects, const std::vector<Candidate>& candidates) const;
};

class MemoryModel {
 public:
  // Segments and which bytes are alive in each, from a reference verdict's step order.
  MemoryModel(const std::vector<Candidate>& candidates, const Verdict& reference);
  // Raises each segment's base (and the fragmentation allowance) so that the model predicts at
  // least what the planner measured for `saved`.
  void calibrate(const Verdict& verdict, const std::vector<char>& saved);
  const std::vector<SegmentModel>& segments() const { return segments_; }
  int64_t fragmentation() const { return fragmentation_; }
  // The model's peak for `saved`.
  int64_t peak(const std::vector<char>& saved) const;

 private:
  const std::vector<Candidate>& candidates_;
  std::vector<SegmentModel> segments_;
  int64_t fragmentation_ = 0;
};

}  // namespace rematkit::solver
