// The budget solver's integer program over the time-indexed memory model (remat_model.hpp): per
// candidate, save, offload or recompute; per candidate and backward moment, whether it has been
// recomputed by then, is still to be read, and so is alive; every stage's bytes within a limit.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "integer_program.hpp"
#include "remat_model.hpp"

namespace rematkit::solver {

// One answer: per candidate, saved (1) or not (0), and offloaded where that is allowed.
struct Answer {
  std::vector<char> saved, offloaded;
};

// Offloaded values count as kept for the closure, but their bytes live in host memory.
std::vector<char> kept_anywhere(const Answer& a);

// An answer the planner rejected, as the needed candidates' answers: the next must differ in one.
using Cut = std::vector<std::pair<size_t, bool>>;  // (candidate, was saved)
Cut cut_of(const std::vector<Candidate>& candidates, const Answer& a);

struct FormulationOptions {
  std::vector<double> cost;           // per candidate: what recomputing it costs
  bool offload = false;               // may keep residuals on the host
  double offload_cost_per_byte = 0;   // what keeping a byte there costs
  bool one_answer_per_signature = false;  // --export-jax: a JAX policy sees only signatures
  // The candidates decided (ascending, closed under reads): one segment of the program. Empty: all.
  // The others answer as `fixed` says (saved where it is empty).
  std::vector<int> members;
  std::vector<char> fixed;
  // Bound the forward pass and the prologue too, not only the members' moments.
  bool bound_forward = true;
  // Per stage: device bytes besides the model's base and the members' (other segments' kept
  // values). Empty: none.
  std::vector<int64_t> extra;
};

class RematFormulation {
 public:
  RematFormulation(const std::vector<Candidate>& candidates, const MemoryModel& model, FormulationOptions options);

  // Minimize recomputation with every stage's modelled bytes within `limit`, or, with no limit,
  // minimize the modelled peak. `cuts` remove answers the planner rejected.
  IntegerProgram build(std::optional<int64_t> limit, const std::vector<Cut>& cuts);
  Answer answer_of(const IntegerProgram::Result& result) const;
  // The integer columns of the program last built that `a` sets to 1: a start for the search.
  std::vector<std::pair<int, double>> start_of(const Answer& a) const;

 private:
  // The parts of build(), in the order they add columns and rows.
  void add_decisions(IntegerProgram& ip, std::optional<int64_t> limit);
  void add_rules(IntegerProgram& ip);
  std::vector<std::vector<std::pair<int, double>>> add_timeline(IntegerProgram& ip) const;
  int add_moment(IntegerProgram& ip, size_t i, int t, int last_read) const;
  void add_bounds(IntegerProgram& ip, std::optional<int64_t> limit,
                  const std::vector<std::vector<std::pair<int, double>>>& at) const;
  void add_cuts(IntegerProgram& ip, const std::vector<Cut>& cuts) const;

  // The column of "candidate i is recomputed by `moment`"; -1 before it could be (then 0). After
  // its last possible moment, the column of that moment.
  int computed_by(size_t i, int moment) const;
  bool member(size_t i) const { return s_[i] >= 0; }

  const std::vector<Candidate>& candidates_;
  const MemoryModel& model_;
  FormulationOptions options_;
  double cost_scale_ = 1.0;
  int first_moment_ = 0, last_moment_ = -1;  // the members' moments
  // Columns of the program last built, per candidate (-1 for one not decided here).
  std::vector<int> s_, o_, n_, r_, k_, h_;
  std::vector<std::vector<int>> c_;  // per candidate: per moment of [earliest, latest], or empty
};

}  // namespace rematkit::solver
