// What every proposer of the budget solver reads and none changes: the options, the candidates
// (the equations to decide) and their timeline, what recomputing each costs, and everything
// saved as the planner planned it.
#pragma once

#include <cstddef>
#include <vector>

#include "rematkit/budget_solver.hpp"
#include "rematkit/plugin_host/backend_options.hpp"
#include "remat_formulation.hpp"

namespace rematkit::solver {

// What moving a byte to pinned host memory and back costs, in cost units: a FLOP, or with measured
// costs a nanosecond.
inline constexpr double kOffloadCostPerByte = 1.0;

struct Problem {
  const BudgetOptions& options;
  const PluginRegistry& plugins;
  bool whole_program = false;  // no checkpoint: the decisions apply to the program as a whole
  Verdict everything;          // everything saved, planned: the top of a fraction's range
  std::vector<Candidate> candidates;
  Timeline timeline;
  std::vector<double> measured_ns;  // per candidate, with --cost measured

  // Every candidate saved (or every one recomputed).
  Answer uniform_for(bool saved) const;
  DecisionTable table_of(const Answer& a) const;
  // What recomputing candidate i once per step costs, in the cost's units.
  double unit_cost(size_t i) const;
  std::vector<double> unit_costs() const;
  // The largest unit cost (at least 1): the integer program's objective is scaled by it.
  double cost_scale() const;
  // The model's recomputation cost of an answer.
  double model_cost(const Answer& a) const;
  // Whether `a` decides every candidate of one signature alike (what a JAX export needs).
  bool agrees_by_signature(const Answer& a) const;
  // Candidates by what recomputing them costs per byte, most first: what a greedy search saves first.
  std::vector<size_t> by_cost_per_byte() const;
  // `a` with candidate i saved, and with it every candidate of its signature when they must agree.
  Answer saving(const Answer& a, size_t i) const;
  // Whether the whole program's integer program is small enough to build and solve in time:
  // candidates times the moments each can be alive at, within a few hundred thousand columns.
  bool integer_program_fits(int64_t most = 300000) const;
  // The integer program over every candidate (or as `f` restricts it), under `model`.
  RematFormulation formulation(const MemoryModel& model, FormulationOptions f = {}) const;
};

// The backends and threads the options ask for (the fastest installed when they name none).
BackendOptions backend_options(const BudgetOptions& options, const PluginRegistry& plugins);

// The problem of a program whose everything-saved plan is `everything`: its candidates found in that
// linearization, their costs counted (or, with --cost measured, timed).
Problem make_problem(const BudgetOptions& options, const PluginRegistry& plugins, bool whole_program, Verdict everything);

}  // namespace rematkit::solver
