// The budget solver's view of a program: the equations a checkpoint's policy decides (candidates),
// which of them the backward pass reads and when, which feed which, and a time-indexed linear model
// of the device bytes live at each step of the backward pass, calibrated on the planner's verdicts.
// Checkmate's formulation (Jain et al., MLSys 2020) restricted to what a JAX policy can say: one
// save-or-recompute answer per equation (jax/_src/interpreters/partial_eval.py, remat partial
// eval), each recomputation run where the reverse pass first reads it (partial_eval.cpp,
// recompute_what), so that a recomputed value lives from there to its last reader.
#pragma once

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
  bool read_by_backward = false;  // partial evaluation hands it to its checkpoint's backward pass
  std::vector<int> read_at;       // the reading moments of the backward pass (Timeline), ascending
  std::vector<int> reads;         // candidates of the same checkpoint whose outputs it reads
  std::vector<int> readers;       // candidates of the same checkpoint that read its outputs
  // The moments at which it can be alive in the backward pass under some answer: from the first
  // moment it or a recomputed reader could be needed, to the last at which it could be read.
  int earliest = -1, latest = -1;  // -1: never needed
};

// The moments of the backward pass that matter to candidates: its equations that read one, in the
// order the reverse pass runs them (the same under every answer; only recomputations move).
struct Timeline {
  std::vector<int> moments;  // graph equations, in backward order
};

// Candidates in program order, and the moments that read them.
std::vector<Candidate> find_candidates(const Linearization& lin, Timeline& timeline);

// What a decision per candidate (saved or not) does under JAX's rules: which outputs are kept as
// residuals and which the backward pass computes again (the closure over recomputed inputs), and
// the moments each is alive: a kept one from the forward pass to `last_use`, a recomputed one from
// `computed_at` (the first moment it or a recomputed reader is read) to `last_use`.
struct Effects {
  std::vector<char> needed, kept, recomputed;
  std::vector<int> computed_at, last_use;
  bool alive_at(size_t candidate, int moment) const;
};
Effects effects_of(const std::vector<Candidate>& candidates, const std::vector<char>& saved);

// The stages the model bounds: the forward pass, the backward pass before its first moment, and
// each moment (with the recomputations run for it and the steps after it up to the next one).
inline constexpr int kForwardStage = 0, kPrologueStage = 1;
inline int stage_of_moment(int moment) { return moment + 2; }

class MemoryModel {
 public:
  MemoryModel(const std::vector<Candidate>& candidates, const Timeline& timeline);
  // Raises each stage's base (parameters, gradients, cotangents, temporaries) and the fragmentation
  // allowance so that the model predicts at least what the planner measured for `saved`.
  void calibrate(const Verdict& verdict, const std::vector<char>& saved);
  int stages() const { return static_cast<int>(base_.size()); }
  int64_t base(int stage) const { return base_[static_cast<size_t>(stage)]; }
  int64_t fragmentation() const { return fragmentation_; }
  // Candidates' device bytes modelled alive at a stage.
  int64_t modelled(int stage, const Effects& effects) const;
  // The model's peak for `saved`.
  int64_t peak(const std::vector<char>& saved) const;

 private:
  // Each step's stage in a verdict's step program.
  std::vector<int> stages_of(const Verdict& verdict) const;

  const std::vector<Candidate>& candidates_;
  std::vector<int> moment_of_eqn_;  // per graph equation: its moment, or -1
  std::vector<int64_t> base_;
  int64_t fragmentation_ = 0;
};

}  // namespace rematkit::solver
