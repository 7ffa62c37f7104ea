#include "rematkit/api/plan.hpp"

#include <algorithm>

#include "rematkit/ir/error.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/runtime/mesh_step_runner.hpp"
#include "rematkit/runtime/step_runner.hpp"

namespace rematkit {

Plan::Plan(Program program, PlanOptions options) : program_(std::move(program)) {
  const PluginRegistry& plugins = options.backends.plugins ? *options.backends.plugins : default_plugins();
  LinearizeOptions lin_options;
  lin_options.policies = &plugins.policies();
  lin_options.policy = options.policy;
  lin_options.policy_source = "the plan's policy";
  lin_options.differentiate = options.differentiate;
  lin_ = std::make_unique<Linearization>(linearize(program_, lin_options));
  backends_ = options.backends;
  backends_.plugins = &plugins;
  if (lin_->graph.mesh) {
    place_on_mesh(*lin_, *lin_->graph.mesh);
    devices_ = std::make_unique<SimulatedDevices>(*lin_, *lin_->graph.mesh, backends_);
  } else {
    gradient_ = std::make_unique<OneShotRunner>(*lin_, backends_);
  }
}

Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

const Linearization& Plan::linearization() const { return *lin_; }

const ArenaLayout& Plan::layout() const { return devices_ ? devices_->device(0).layout() : gradient_->layout(); }

int64_t Plan::measured_peak(MemorySpace space) const {
  return devices_ ? devices_->measured_peak(space) : gradient_->measured_peak(space);
}

const MemoryReport& Plan::memory_report() const {
  if (!memory_report_)
    memory_report_ = std::make_unique<MemoryReport>(
        build_memory_report(devices_ ? devices_->device(0).program() : gradient_->program()));
  return *memory_report_;
}

std::string Plan::residual_report(bool explain) const { return format_residual_report(*lin_, explain); }

int64_t Plan::residual_bytes() const { return rematkit::residual_bytes(*lin_); }

void Plan::check_inputs(const std::vector<Tensor>& arguments, const std::vector<Tensor>& constants) const {
  auto check = [](const char* what, const std::vector<Tensor>& given, const std::vector<int>& vars, const Program& p) {
    if (given.size() != vars.size())
      fail("the program takes " + std::to_string(vars.size()) + " " + what + "s, not " + std::to_string(given.size()));
    for (size_t i = 0; i < given.size(); ++i) {
      const Type& expected = p.vars[static_cast<size_t>(vars[i])].type;
      if (given[i].type.shape != expected.shape || static_cast<int64_t>(given[i].data.size()) != expected.num_elements())
        fail(std::string(what) + " " + std::to_string(i) + " ('" + p.vars[static_cast<size_t>(vars[i])].name + "') is " +
             given[i].type.str() + " where the program has " + expected.str());
    }
  };
  check("argument", arguments, program_.invars, program_);
  check("constant", constants, program_.constvars, program_);
}

std::vector<Tensor> Plan::forward(const std::vector<Tensor>& arguments, const std::vector<Tensor>& constants) {
  check_inputs(arguments, constants);
  if (devices_) return devices_->run(constants, arguments).outputs;  // on a mesh: the whole step
  if (!forward_) forward_ = std::make_unique<OneShotRunner>(*lin_, backends_, Pass::kForward);
  return forward_->run(constants, arguments).outputs;
}

GradientResult Plan::gradient(const std::vector<Tensor>& arguments, const std::vector<Tensor>& constants) {
  check_inputs(arguments, constants);
  return devices_ ? devices_->run(constants, arguments) : gradient_->run(constants, arguments);
}

TrainingStep Plan::training_step(const std::vector<Tensor>& arguments, std::vector<size_t> params, double learning_rate,
                                 const std::vector<Tensor>& constants) const {
  check_inputs(arguments, constants);
  return TrainingStep(*lin_, backends_, std::move(params), learning_rate, arguments, constants);
}

}  // namespace rematkit
