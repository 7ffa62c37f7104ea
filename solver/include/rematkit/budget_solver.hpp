// The cheapest policy under a memory budget: for every equation inside a program's checkpoints,
// save or recompute (or offload), so that the step's planned device peak stays within the budget
// at the least recomputation. The exact planner judges every answer: the peak printed is the one
// the step program's arena layout has, and so the one a run measures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <optional>

#include "rematkit/ir/error.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/policy/policy.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/solver/export.hpp"

namespace rematkit {

class PluginRegistry;

// A budget as the user writes it: bytes ("64MiB", "1.5GiB", "4096"), a fraction between 0 and 1, or
// "min". A fraction f is lo + f (hi - lo) bytes: hi is everything_saveable's planned peak and lo the
// smallest planned peak of JAX's fixed policies (everything_saveable, nothing_saveable,
// dots_saveable, dots_with_no_batch_dims_saveable) and of the structured search's answer of least
// peak (dynamic programming over alike layers or segments, before any time limit applies). All are
// planned exactly, so a fraction means the same bytes whatever the time limit. "min" asks for the
// smallest peak the solver can find in its time.
struct Budget {
  bool is_fraction = false;
  bool smallest = false;  // "min"
  double value = 0.0;  // bytes, or the fraction
  std::string text;    // as written
};
// A bad-input Error naming `what` (e.g. "--budget") for anything else.
REMATKIT_SOLVER_EXPORT Budget parse_budget(const std::string& text, const std::string& what);

enum class RecomputeCost {
  kFlops,     // each equation's FLOP count (flops.hpp)
  kMeasured,  // each kernel timed once on the chosen backends, in nanoseconds
};
// "flops" or "measured"; a bad-input Error naming `what` (e.g. "--cost") for anything else.
REMATKIT_SOLVER_EXPORT RecomputeCost parse_recompute_cost(const std::string& text, const std::string& what);

struct BudgetOptions {
  Budget budget;
  RecomputeCost cost = RecomputeCost::kFlops;
  // How the plans it judges run (an empty preference: the fastest installed, as a Plan's); its
  // plugins are where the policies come from too.
  BackendOptions backends{.preference = {}};
  std::vector<size_t> differentiate;  // jax.grad's argnums; empty: every floating argument
  // Give equations a JAX policy cannot tell apart (same primitive, operand avals and name) the same
  // decision, so that the answer exports as a Python policy.
  bool jax_signatures = false;
  bool allow_offload = false;        // may keep a residual in pinned host memory instead
  // Dynamic programming over alike layers and segments first, and searches on the planner beside
  // the integer program; false: the integer program alone (for comparison; it is how the solver
  // decided before the structured search).
  bool structure = true;
  // On a mesh, what recomputing a collective costs per byte a device sends, in FLOPs (the FLOPs a
  // device does in the time its link moves a byte; --comm-bandwidth): FSDP's re-gathers weigh
  // against the bytes their results hold. 0: collectives cost nothing. With RecomputeCost::kFlops.
  double comm_flops_per_byte = 0;
  // The same with RecomputeCost::kMeasured, in nanoseconds per byte (--comm-ns-per-byte: what an
  // MPI run's `grad --plan` measured its collectives at).
  double comm_ns_per_byte = 0;
  // The whole solve's wall time: it answers within it (plus 10%) with the best answer found so far
  // and the gap it proved. The four fixed policies are always planned, however long they take.
  double time_limit_seconds = 8.0;
  // One device's bytes on this mesh (analysis/device_placement.hpp: the budget, the fractions and
  // every plan per device); nullopt: whole arrays.
  std::optional<Mesh> mesh;
};

// One equation the solver decided.
struct SolvedEquation {
  std::string site;        // "LINE:COL#N" (rk_equation_view::site); in a scan body, "SCAN/LINE:COL#N"
  std::string primitive;
  std::string signature;   // what a JAX policy sees: "dot_general f32[8,16] f32[16,32]"
  std::string type;        // its outputs' types: "f32[8,32]"
  SourceLocation where;
  Decision decision = Decision::kSaveable;
  bool read_by_backward = false;  // kept or recomputed at all (false: the decision changes nothing)
  int64_t bytes = 0;              // its outputs, as buffers take them (kept: in every iteration)
  double cost = 0.0;              // recomputing it once, in the cost's units (in every iteration)
  int64_t iterations = 1;         // how many times it runs in a step (a scan body's: the scans' lengths)
};

struct BudgetSolution {
  std::vector<SolvedEquation> equations;  // every equation inside a checkpoint, in program order
  bool whole_program = false;  // the program has no checkpoint: the decisions apply to it as a whole
  RecomputeCost cost_kind = RecomputeCost::kFlops;
  int64_t budget_bytes = 0;
  int64_t peak_bytes = 0;          // the planned device peak of the answer (<= budget_bytes)
  int64_t smallest_peak = 0;       // the smallest planned peak the solver found for any decisions
  int64_t everything_peak = 0;     // everything_saveable's planned peak: a fraction's 1
  // A fraction's 0: the smallest planned peak of JAX's fixed policies and of the structured answer
  // of least peak (found the same at any time limit).
  int64_t fraction_zero_peak = 0;
  int64_t residual_bytes = 0;
  double recompute_flops = 0.0;
  double cost = 0.0;               // the objective: recomputation in the cost's units
  std::string method;              // how the answer was found
  int segments = 0;                // the alike-segment structure it used (0: none)
  bool proven_optimal = false;     // optimal for the memory model, its peak checked by the planner
  bool bound_known = false;        // lower_bound was proved (by the integer program or an exact search)
  double lower_bound = 0.0;        // no decisions under the budget cost less (by the model)
  std::string optimal_among;       // when proven_optimal holds only within a class of answers
  int planner_calls = 0;
  double seconds = 0.0;
  double structured_seconds = 0.0;  // the longest one run of the dynamic programs took
};

// Solves `program` (its checkpoints', or as a whole when it has none) under options.budget. A
// bad-input Error when the budget is below the smallest feasible peak, naming that minimum.
REMATKIT_SOLVER_EXPORT BudgetSolution solve_budget(const Program& program, const BudgetOptions& options);

// The same for several budgets at once (options.budget unused), sharing what they have in common:
// the fixed policies planned, the structure and the answers planned for it. One time limit for all.
// Each budget's answer is the cheapest planned for any of them within it, so a larger budget never
// costs more and a smaller one never plans a larger peak.
REMATKIT_SOLVER_EXPORT std::vector<BudgetSolution> solve_budgets(const Program& program, const BudgetOptions& options,
                                          const std::vector<Budget>& budgets);

// Whether this build has the exact method (COIN-OR CBC); without it a greedy search answers.
REMATKIT_SOLVER_EXPORT bool budget_solver_is_exact();

// `program` linearized under a solution's decisions, as the policy solved('FILE') of its
// decisions_json gives it (options as the solution was solved with).
struct Linearization;
REMATKIT_SOLVER_EXPORT Linearization linearize_solution(const Program& program, const BudgetSolution& solution, const BudgetOptions& options);

// The answer as text: the decisions, explained like `residuals --explain`, then peak, cost and method.
REMATKIT_SOLVER_EXPORT std::string format_budget_solution(const BudgetSolution& solution);
// "saveable", "recompute" or "offloadable", as the decisions file says them.
REMATKIT_SOLVER_EXPORT const char* decision_word(Decision decision);
// The decisions file the `solved('FILE')` policy reads (format rematkit-decisions/1).
REMATKIT_SOLVER_EXPORT std::string decisions_json(const BudgetSolution& solution);
// Whether JAX's names policies say the answer. They decide by checkpoint_name's name alone
// (jax/_src/ad_checkpoint.py, SaveOnlyTheseNames and SaveAndOffloadOnlyTheseNames): a `name`
// equation whose name is listed is saved (or offloaded), every other equation recomputed. So they
// say it when every value the backward pass reads that the answer keeps is a `name` output and
// every name's read values are decided alike; values it never reads are free either way.
struct NamesPolicy {
  bool sayable = false;
  std::vector<std::string> saved;      // the names, sorted
  std::vector<std::string> offloaded;  // the names kept in pinned host memory, sorted
  std::string why_not;                 // when not sayable, one line: the values names cannot say
};
REMATKIT_SOLVER_EXPORT NamesPolicy names_policy_of(const BudgetSolution& solution);

// The --export-jax file. Where names say the answer, JAX's names policy
// (`policy = jax.checkpoint_policies.save_only_these_names(...)`, or the save_and_offload form),
// which jax_remat3 reads too; otherwise a Python module with `policy(prim, *avals, **params)`
// deciding by signature, which says why names do not suffice and that jax_remat3 never calls it.
// The function needs a solution solved with jax_signatures and no offloaded value (a bad-input
// Error otherwise).
REMATKIT_SOLVER_EXPORT std::string jax_policy_python(const BudgetSolution& solution);

}  // namespace rematkit
