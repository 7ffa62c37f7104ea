// The budget solver's view of a program: the equations a checkpoint's policy decides (candidates),
// which of them the backward pass reads and when, which feed which, and a time-indexed linear model
// of the device bytes live at each step of the backward pass, calibrated on the planner's verdicts.
// Checkmate's formulation (Jain et al., MLSys 2020) restricted to what a JAX policy can say: one
// save-or-recompute answer per equation (jax/_src/interpreters/partial_eval.py, remat partial
// eval), each recomputation run where the reverse pass first reads it (partial_eval.cpp,
// recompute_what), so that a recomputed value lives from there to its last reader.
//
// Scan bodies are decided too (jax/_src/lax/control_flow/loops.py, _scan_partial_eval_custom): one
// answer per body equation holds for every iteration. A kept body value is stacked over the
// iterations, [L, ...]; a recomputed one costs L times its FLOPs.
//  - A checkpoint inside the body (nn.scan(nn.remat(Block))) recomputes inside each iteration of
//    the transposed scan: the body's backward moments join the timeline where that scan runs, and a
//    recomputed body value lives one iteration's bytes within them.
//  - A checkpoint around the scan decides the body's residuals: kept ones are stacked from the
//    forward scan, recomputed ones stacked again by a scan in the checkpoint's backward pass, both
//    read where the transposed scan runs.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "planner_judge.hpp"
#include "rematkit/autodiff/linearize.hpp"

namespace rematkit {
struct ScanLinearization;
}

namespace rematkit::solver {

// A graph whose equations are candidates: the program's (level 0), or a scan body's.
struct Level {
  const Linearization* lin = nullptr;
  int parent = -1;        // the level whose graph holds the scan; -1 for the program
  std::string prefix;     // its graph's site prefix (FlatGraph::site_prefix): names it in any verdict
  int64_t iterations = 1; // times its body runs in one step (the scans' lengths, multiplied)
};

struct Candidate {
  int level = 0;
  int eqn = -1;          // in its level's graph
  std::string site, primitive, signature;
  std::string type;  // its outputs' types, as messages list them
  SourceLocation where;
  int scope = 0;         // candidates of one scope are decided by one checkpoint and read each other
  int64_t bytes = 0;     // its outputs while computed, aligned as buffers are (one iteration's)
  int64_t stack_bytes = 0;  // and, when kept, what keeping it holds besides (its rows of every iteration)
  int stack_until = -1;     // the last moment that stack is held
  double flops = 0.0;    // recomputing it (in every iteration)
  bool read_by_backward = false;  // partial evaluation hands it to its checkpoint's backward pass
  std::vector<int> read_at;       // the reading moments of the backward pass (Timeline), ascending
  std::vector<int> reads;         // candidates of the same scope whose outputs it reads
  std::vector<int> readers;       // candidates of the same scope that read its outputs
  // The moments at which it can be alive in the backward pass under some answer: from the first
  // moment it or a recomputed reader could be needed, to the last at which it could be read.
  int earliest = -1, latest = -1;  // -1: never needed
};

// A backward equation of a level's graph, named so that the same equation is found in every
// verdict's linearization (indices move when a policy changes what a scan hoists or recomputes).
using EquationKey = std::tuple<int, int, int, int, int, int>;  // line, column, prim, origin, part, occurrence
std::vector<EquationKey> equation_keys(const FlatGraph& graph);

// The moments of the backward pass that matter to candidates: the equations that read one, in the
// order the reverse pass runs them (the same under every answer; only recomputations move). A scan
// body's backward moments stand where its transposed scan runs.
struct Moment {
  int level = 0;
  int eqn = -1;  // in its level's graph
};
struct Timeline {
  std::vector<Level> levels;
  std::vector<Moment> moments;
  std::map<std::pair<int, EquationKey>, int> moment_of;  // (level, key) -> moment
  std::map<std::string, int> level_of_prefix;             // a graph's site prefix -> its level
};

// Candidates, levels and moments of a linearization (everything saved). On a mesh, a collective's
// cost adds `comm_flops_per_byte` for each byte a device sends (analysis/communication.hpp).
std::vector<Candidate> find_candidates(const Linearization& lin, Timeline& timeline, double comm_flops_per_byte = 0);

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
// The same over `members` alone (ascending indices, closed under reads): the rest are left unset.
void effects_within(const std::vector<Candidate>& candidates, const std::vector<char>& saved,
                    const std::vector<int>& members, Effects& fx);
// The device bytes of candidate i at `moment` (of the backward pass) under `fx`, its stack included.
int64_t bytes_at(const Candidate& c, const Effects& fx, size_t i, int moment);
// Its bytes in the forward pass and before the backward pass's first moment: kept ones, stacked.
inline int64_t kept_bytes(const Candidate& c, const Effects& fx, size_t i) {
  return fx.kept[i] ? c.bytes + c.stack_bytes : 0;
}

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
  // The bytes by which its stages exceed `limit`, summed over the stages.
  int64_t excess(const std::vector<char>& saved, int64_t limit) const;

 private:
  // Each step of a verdict (a scan body's steps expanded where its moments are), by stage, with
  // its live bytes.
  std::vector<std::pair<int, int64_t>> stage_live(const Verdict& verdict) const;

  const std::vector<Candidate>& candidates_;
  const Timeline& timeline_;
  std::vector<int64_t> base_;
  int64_t fragmentation_ = 0;
};

}  // namespace rematkit::solver
