#include "planner_judge.hpp"

#include <algorithm>

#include "rematkit/analysis/device_placement.hpp"

#include "rematkit/analysis/communication.hpp"
#include "rematkit/analysis/flops.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit::solver {
namespace {

// A policy that answers from a decision table by the equation's site.
class TablePolicy final : public Policy {
 public:
  explicit TablePolicy(std::shared_ptr<const DecisionTable> table) : table_(std::move(table)) {}
  PolicyAnswer decide(const EquationView& eqn) const override {
    const auto it = table_->by_site.find(std::string(eqn.site));
    PolicyAnswer answer;
    answer.decision = it == table_->by_site.end() ? table_->otherwise : it->second;
    return answer;
  }
  std::string spec() const override { return kTablePolicyName; }

 private:
  std::shared_ptr<const DecisionTable> table_;
};

}  // namespace

PlannerJudge::PlannerJudge(const Program& program, bool whole_program, const PolicyRegistry& policies,
                           BackendOptions backends, std::vector<size_t> differentiate, std::optional<Mesh> mesh,
                           double comm_flops_per_byte)
    : original_(program),
      program_(whole_program ? program : retarget_checkpoint_policies(program, kTablePolicyName, "the solver")),
      whole_program_(whole_program),
      policies_(policies),
      backends_(std::move(backends)),
      differentiate_(std::move(differentiate)),
      mesh_(std::move(mesh)),
      comm_flops_per_byte_(comm_flops_per_byte) {}

Linearization PlannerJudge::linearize_with(const DecisionTable& table) const {
  PolicyRegistry registry = policies_;
  auto shared = std::make_shared<const DecisionTable>(table);
  registry.add(kTablePolicyName, [shared](const std::vector<ParamValue>&, const PolicyRegistry&) -> PolicyPtr {
    return std::make_shared<TablePolicy>(shared);
  });
  LinearizeOptions options;
  options.policies = &registry;
  if (whole_program_) options.policy = kTablePolicyName;
  options.policy_source = "the solver";
  options.differentiate = differentiate_;
  return placed(linearize(program_, options));
}

Linearization PlannerJudge::placed(Linearization lin) const {
  if (mesh_) place_on_mesh(lin, *mesh_);
  return lin;
}

Linearization PlannerJudge::linearize_as(const std::string& spec) const {
  LinearizeOptions options;
  options.policies = &policies_;
  options.policy_source = "the solver";
  options.differentiate = differentiate_;
  if (whole_program_) {
    options.policy = spec;
    return placed(linearize(original_, options));
  }
  return placed(linearize(retarget_checkpoint_policies(original_, spec, "the solver"), options));
}

StepProfile profile_of(const StepProgram& program) {
  const ArenaLayout& layout = program.layout();
  const size_t n_steps = program.steps().size();
  std::vector<int64_t> live(n_steps + 1, 0);  // device bytes live at each step, by a sweep over lifetimes
  for (const BufferRequest& b : layout.buffers) {
    if (b.space != MemorySpace::kDevice) continue;
    live[static_cast<size_t>(b.first_step)] += aligned_bytes(b.bytes);
    live[static_cast<size_t>(b.last_step) + 1] -= aligned_bytes(b.bytes);
  }
  for (size_t t = 1; t <= n_steps; ++t) live[t] += live[t - 1];
  StepProfile p;
  p.graph = &program.linearization().graph;
  p.live.assign(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(n_steps));
  p.arena = layout.arena(MemorySpace::kDevice);
  p.live_peak = layout.live_peak(MemorySpace::kDevice);
  for (const Step& step : program.steps()) {
    p.equation.push_back(step.runs_equation() ? step.equation : -1);
    p.backward.push_back(step.pass == Pass::kBackward);
    const bool device = step.workspace >= 0 && layout.buffers[static_cast<size_t>(step.workspace)].space == MemorySpace::kDevice;
    p.workspace.push_back(device ? aligned_bytes(layout.buffers[static_cast<size_t>(step.workspace)].bytes) : 0);
    const StepProgram* body = scan_body_program(step);
    p.body.push_back(body ? std::make_shared<const StepProfile>(profile_of(*body)) : nullptr);
  }
  return p;
}

Verdict PlannerJudge::judge(const DecisionTable& table) {
  ++calls_;
  auto lin = std::make_shared<const Linearization>(linearize_with(table));
  const StepProgram program = build_step_program(*lin, backends_, Pass::kBackward, InputMode::kLoadedEachRun);
  Verdict v;
  v.steps = profile_of(program);
  v.arena_peak = v.steps.arena;
  v.live_peak = v.steps.live_peak;
  v.recompute_flops = static_cast<double>(gradient_flops(*lin).recompute);
  if (comm_flops_per_byte_ > 0 && lin->graph.mesh)
    v.recompute_flops += comm_flops_per_byte_ * static_cast<double>(gradient_communication(*lin, *lin->graph.mesh).recompute);
  v.residual_bytes = residual_bytes(*lin);
  v.lin = std::move(lin);
  return v;
}

}  // namespace rematkit::solver
