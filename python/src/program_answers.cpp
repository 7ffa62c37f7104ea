#include "program_answers.hpp"

#include <algorithm>
#include <chrono>

#include "rematkit/budget_solver.hpp"
#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/analysis/flops.hpp"
#include "rematkit/analysis/gradient_difference.hpp"
#include "rematkit/io/memory_report_json.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/api/plan.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace rematkit::python {
namespace {

Program edited(const Program& program, const ProgramEdits& edits) {
  if (edits.retarget_policy.empty()) return program;
  return retarget_checkpoint_policies(program, edits.retarget_policy, "retarget_policy");
}

std::vector<size_t> differentiated(const Program& program, const ProgramEdits& edits) {
  return edits.wrt.empty() ? std::vector<size_t>{} : argument_indices(program, edits.wrt, "wrt");
}

// The backends, threads, memory cap and backends' own options a call asked for.
BackendOptions backend_options_of(const RunOn& on) {
  BackendOptions options;
  options.preference = on.backends;
  options.threads = on.threads;
  options.max_memory = on.max_memory;
  for (const std::string& text : on.backend_options) options.backend_options.push_back(parse_backend_option(text));
  return options;
}

PlanOptions plan_options(const Program& program, const std::string& policy, const ProgramEdits& edits, const RunOn& on) {
  PlanOptions options;
  options.policy = policy;
  options.backends = backend_options_of(on);
  options.differentiate = differentiated(program, edits);
  return options;
}

// The linearization an analysis reads: placed on `mesh` (one device's bytes) when there is one.
Linearization analysed(const Program& p, const std::string& policy, const ProgramEdits& edits,
                       const std::optional<Mesh>& mesh) {
  LinearizeOptions options;
  options.policies = &default_plugins().policies();
  options.policy = policy;
  options.policy_source = "policy";
  options.differentiate = differentiated(p, edits);
  Linearization lin = linearize(p, options);
  if (mesh) place_on_mesh(lin, *mesh);
  return lin;
}

}  // namespace

std::vector<ResidualRow> residual_rows(const Program& program, const std::string& policy, const ProgramEdits& edits) {
  const Program p = edited(program, edits);
  const Linearization lin = analysed(p, policy, edits, resolve_mesh(p, edits.mesh, edits.whole_arrays, "mesh"));
  std::vector<ResidualRow> rows;
  for (const Residual& r : lin.residuals) {
    ResidualRow row;
    Type kept = device_type(lin.graph.values[static_cast<size_t>(r.value)]);  // one device's, on a mesh
    kept.space = r.type.space;
    row.dtype = std::string(dtype_name(kept.dtype));
    row.shape = kept.shape;
    row.nbytes = kept.bytes();
    row.source = residual_origin(lin, r);
    const Value& v = lin.graph.values[r.value];
    if (v.origin == ValueOrigin::kEquation) {
      const SourceLocation& where = lin.graph.eqns[static_cast<size_t>(v.producer)].where;
      row.file = where.file;
      row.line = where.line;
      row.column = where.column;
    }
    row.memory_space = std::string(memory_space_name(r.type.space));
    row.why = residual_reason(lin, r);
    row.line_text = kept.str() + " " + row.source;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string memory_json(const Program& program, const std::string& policy, const ProgramEdits& edits, const RunOn& on) {
  const Program p = edited(program, edits);
  const std::optional<Mesh> mesh = resolve_mesh(p, edits.mesh, edits.whole_arrays, "mesh");
  if (mesh || edits.whole_arrays) {
    // One device's plan, or the whole arrays' (a Plan places a program on its mesh): planned, not run.
    const Linearization lin = analysed(p, policy, edits, mesh);
    const StepProgram steps = build_step_program(lin, backend_options_of(on), Pass::kBackward, InputMode::kLoadedEachRun);
    return memory_report_json(build_memory_report(steps));
  }
  const Plan plan(p, plan_options(p, policy, edits, on));
  return memory_report_json(plan.memory_report());
}

SolveAnswer solve(const Program& program, const SolveRequest& request, const ProgramEdits& edits, const RunOn& on) {
  const Program p = edited(program, edits);
  BudgetOptions options;
  options.budget = parse_budget(request.budget, "budget");
  options.cost = parse_recompute_cost(request.cost, "cost");
  options.backends = backend_options_of(on);
  options.differentiate = differentiated(p, edits);
  options.jax_signatures = request.for_jax;
  options.allow_offload = request.offload;
  options.structure = request.structure;
  options.time_limit_seconds = request.time_limit_seconds;
  options.mesh = resolve_mesh(p, edits.mesh, edits.whole_arrays, "mesh");
  const BudgetSolution s = solve_budget(p, options);
  SolveAnswer a;
  a.summary = format_budget_solution(s);
  a.decisions_json = decisions_json(s);
  const NamesPolicy names = names_policy_of(s);
  a.names_saved = names.saved;
  a.names_offloaded = names.offloaded;
  a.names_why_not = names.sayable ? std::string() : names.why_not;
  if (request.for_jax && (!request.offload || names.sayable)) a.jax_policy = jax_policy_python(s);
  a.budget_bytes = s.budget_bytes;
  a.peak_bytes = s.peak_bytes;
  a.smallest_peak = s.smallest_peak;
  a.residual_bytes = s.residual_bytes;
  a.recompute_flops = s.recompute_flops;
  a.cost = s.cost;
  a.method = s.method;
  a.proven_optimal = s.proven_optimal;
  a.whole_program = s.whole_program;
  a.seconds = s.seconds;
  for (const SolvedEquation& e : s.equations)
    a.equations.push_back({e.site, e.primitive, e.signature, e.type, e.where.str(), decision_word(e.decision),
                           e.read_by_backward, e.bytes, e.iterations, e.cost});
  return a;
}

GradAnswer grad(const Program& program, const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                const std::string& policy, const ProgramEdits& edits, const RunOn& on) {
  const Program p = edited(program, edits);
  Plan plan(p, plan_options(p, policy, edits, on));
  GradientResult r = plan.gradient(arguments, constants);
  return GradAnswer{std::move(r.outputs), std::move(r.gradients)};
}

std::vector<CompareRow> compare(const Program& program, const std::vector<std::string>& policies, int repetitions,
                                const ProgramEdits& edits, const RunOn& on) {
  if (policies.empty()) fail("compare: give at least one policy");
  const Program p = edited(program, edits);
  const sweep::ModelInstance inputs = sweep::program_instance(p, 0, on.max_memory);  // rematkit compare's inputs
  std::vector<CompareRow> rows;
  std::optional<GradientResult> first;
  for (const std::string& policy : policies) {
    Plan plan(p, plan_options(p, policy, edits, on));
    CompareRow row;
    row.policy = policy;
    row.residuals = static_cast<int64_t>(plan.linearization().residuals.size());
    row.residual_bytes = plan.residual_bytes();
    row.predicted_peak = plan.predicted_peak();
    const GradientFlops flops = gradient_flops(plan.linearization());
    row.forward_flops = flops.forward;
    row.recompute_flops = flops.recompute;
    row.backward_flops = flops.backward;
    std::vector<double> ms;
    GradientResult result;
    for (int i = 0; i < std::max(1, repetitions); ++i) {
      const auto start = std::chrono::steady_clock::now();
      result = plan.gradient(inputs.arguments, inputs.constants);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    row.median_ms = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
    row.measured_peak = plan.measured_peak();
    if (first) row.max_grad_diff = max_abs_difference(gradient_differences(result, *first));
    else first = std::move(result);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace rematkit::python
