#include "rematkit/analysis/step_times.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "rematkit/ir/error.hpp"

namespace rematkit {
namespace {

std::string kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kLoad: return "load";
    case StepKind::kKernel: return "kernel";
    case StepKind::kLoop: return "loop";
    case StepKind::kReadout: return "readout";
    case StepKind::kEffect: return "effect";
    case StepKind::kHostCall: return "host call";
    case StepKind::kCollective: return "collective";
  }
  return "step";
}

// The primitives a step runs: a fused kernel's in order, joined by '+'.
std::string primitives_of(const Step& step, const FlatGraph& graph) {
  if (!step.runs_equation()) return "";
  if (step.fused.empty()) return std::string(prim_name(graph.eqns[static_cast<size_t>(step.equation)].prim));
  std::string what;
  for (int e : step.fused) {
    if (!what.empty()) what += '+';
    what += prim_name(graph.eqns[static_cast<size_t>(e)].prim);
  }
  return what;
}

}  // namespace

std::vector<StepTimeRow> step_time_rows(const StepProgram& program, const std::vector<int64_t>& step_ns) {
  const std::vector<Step>& steps = program.steps();
  if (step_ns.size() != steps.size())
    fail("step times: " + std::to_string(step_ns.size()) + " times for a program of " + std::to_string(steps.size()) + " steps");
  std::vector<StepTimeRow> rows;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> row_of;
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    StepTimeRow key;
    key.backend = step.kind == StepKind::kKernel ? step.kernel->backend() : kind_name(step.kind);
    key.what = primitives_of(step, program.linearization().graph);
    if (!step.outputs.empty()) key.dtype = std::string(dtype_name(program.buffer_type(step.outputs[0]).dtype));
    const auto [at, added] = row_of.try_emplace({key.backend, key.what, key.dtype}, rows.size());
    if (added) rows.push_back(std::move(key));
    StepTimeRow& row = rows[at->second];
    row.steps += 1;
    row.ns += step_ns[s];
  }
  std::stable_sort(rows.begin(), rows.end(), [](const StepTimeRow& a, const StepTimeRow& b) { return a.ns > b.ns; });
  return rows;
}

}  // namespace rematkit
