// The exact planner as the budget solver's judge: a decision per equation site, applied to the
// program's checkpoints (or to the whole program), linearized and planned on the chosen backends,
// and the planned device peak read off the arena layout, with the live bytes per step the
// solver's memory model is calibrated on.
#pragma once

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/policy/policy.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit::solver {

// Decisions by equation site; equations not listed (a loop body's) get `otherwise`.
struct DecisionTable {
  std::map<std::string, Decision> by_site;
  Decision otherwise = Decision::kSaveable;
};

// The device bytes live at each step of a step program, what the memory model is calibrated on. A
// loop step holds its body's arena as its workspace; a scan's body pass is profiled the same way.
struct StepProfile {
  const FlatGraph* graph = nullptr;  // whose equations the steps run
  std::vector<int64_t> live;
  std::vector<int> equation;         // per step: its graph equation (-1 for loads and readouts)
  std::vector<char> backward;        // per step: in the backward pass
  std::vector<int64_t> workspace;    // per step: its workspace buffer's bytes, counted in `live`
  std::vector<std::shared_ptr<const StepProfile>> body;  // per step: a scan loop step's body pass
  int64_t arena = 0;                 // the planned device peak
  int64_t live_peak = 0;             // the most device bytes live at one step
};
StepProfile profile_of(const StepProgram& program);

struct Verdict {
  int64_t arena_peak = 0;  // the planned device peak
  int64_t live_peak = 0;   // the most device bytes live at one step (arena_peak minus fragmentation)
  StepProfile steps;
  double recompute_flops = 0.0;
  int64_t residual_bytes = 0;
  std::shared_ptr<const Linearization> lin;
};

class PlannerJudge {
 public:
  // `whole_program`: the program has no checkpoint, so the decisions apply to it as a whole.
  // `comm_flops_per_byte`: what each byte a recomputed collective sends adds to a verdict's
  // recompute cost (BudgetOptions::comm_flops_per_byte).
  PlannerJudge(const Program& program, bool whole_program, const PolicyRegistry& policies, BackendOptions backends,
               std::vector<size_t> differentiate, std::optional<Mesh> mesh = std::nullopt, double comm_flops_per_byte = 0);
  Verdict judge(const DecisionTable& table);
  // The linearization alone (no planning), for reading the program's equations.
  Linearization linearize_with(const DecisionTable& table) const;
  // The same program under a registered policy instead (in the checkpoints, or around the whole).
  Linearization linearize_as(const std::string& spec) const;
  int calls() const { return calls_; }

 private:
  Linearization placed(Linearization lin) const;  // on mesh_, when there is one

  Program original_;
  Program program_;  // with every checkpoint's policy the solver's table (when it has checkpoints)
  bool whole_program_;
  const PolicyRegistry& policies_;
  BackendOptions backends_;
  std::vector<size_t> differentiate_;
  std::optional<Mesh> mesh_;  // every linearization placed on it: one device's bytes
  double comm_flops_per_byte_ = 0;
  int calls_ = 0;
};

// The name the judge gives its table policy in the registry it linearizes with.
inline constexpr const char* kTablePolicyName = "rematkit_solver_table";

}  // namespace rematkit::solver
