#include "rematkit/runtime/mesh_step_runner.hpp"

#include <algorithm>
#include <memory>
#include <optional>

#include "rematkit/interpreter/device_collective.hpp"
#include "rematkit/interpreter/simulated_mesh.hpp"

namespace rematkit {
namespace {

// The shard_map equation that splits `v` (its shard_map_in) or makes it (its shard_map_out):
// where a value's block on a device is said.
const FlatEquation* split_of(const FlatGraph& graph, ValueId v) {
  for (const FlatEquation& eqn : graph.eqns) {
    if (eqn.prim == Prim::kShardMapIn && eqn.inputs.at(0) == v) return &eqn;
    if (eqn.prim == Prim::kShardMapOut && eqn.outputs.at(0) == v) return &eqn;
  }
  return nullptr;
}

[[noreturn]] void refuse_unsplit(const char* what, size_t index, const Value& value) {
  fail(std::string(what) + " " + std::to_string(index) + " (" + value.type.str() +
       ") is split over the mesh, but by no shard_map's spec: a value GSPMD's propagation splits needs the "
       "collectives XLA inserts, which a step on a mesh does not run (write the step as a shard_map)");
}

// The whole value from every device's `block` of it, split as `split` says.
Tensor whole_value(MeshTransport& transport, const FlatEquation* split, const Tensor& block, const Type& whole,
                   const char* what, size_t index, const Value& value) {
  if (block.type.shape == whole.shape) return block;
  if (!split) refuse_unsplit(what, index, value);
  return run_device_collective(transport, Prim::kShardMapOut, split->params, &block, whole, Arithmetic::kFloat32);
}

void check_count(const char* what, size_t given, size_t expected) {
  if (given != expected)
    fail("the program takes " + std::to_string(expected) + " " + what + "s, not " + std::to_string(given));
}

}  // namespace

Tensor device_block_of(const Linearization& lin, ValueId v, const Mesh& mesh, int64_t device, const Tensor& whole,
                       const char* what, size_t index) {
  const Type block = device_type(lin.graph.values[v]);
  if (block.shape == whole.type.shape) return whole;
  const FlatEquation* split = split_of(lin.graph, v);
  if (!split || split->prim != Prim::kShardMapIn) refuse_unsplit(what, index, lin.graph.values[v]);
  return split_to_device(mesh, device, split->params, whole, block);
}

MeshStepRunner::MeshStepRunner(const Linearization& lin, const Mesh& mesh, const BackendOptions& backends)
    : StepRunner(build_step_program(lin, backends, Pass::kBackward, InputMode::kLoadedEachRun), backends), mesh_(mesh) {}

GradientResult MeshStepRunner::run(MeshTransport& transport, const std::vector<Tensor>& constants,
                                   const std::vector<Tensor>& arguments) {
  const Linearization& lin = program().linearization();
  const FlatGraph& g = lin.graph;
  check_count("constant", constants.size(), lin.constants.size());
  check_count("argument", arguments.size(), lin.arguments.size());
  std::vector<Tensor> my_constants, my_arguments;
  for (size_t i = 0; i < constants.size(); ++i)
    my_constants.push_back(device_block_of(lin, lin.constants[i], mesh_, transport.device(), constants[i], "constant", i));
  for (size_t i = 0; i < arguments.size(); ++i)
    my_arguments.push_back(device_block_of(lin, lin.arguments[i], mesh_, transport.device(), arguments[i], "argument", i));
  GradientResult mine;
  run_steps(RunIo{&my_constants, &my_arguments, nullptr, &mine, &transport}, nullptr);
  // Every device joins the same values in the same order: the joins are collectives too.
  GradientResult whole;
  for (size_t k = 0; k < mine.outputs.size(); ++k) {
    const Value& value = g.values[lin.outputs[k]];
    whole.outputs.push_back(
        whole_value(transport, split_of(g, lin.outputs[k]), mine.outputs[k], value.type, "output", k, value));
  }
  for (size_t i = 0; i < mine.gradients.size(); ++i) {
    if (!mine.gradients[i]) {
      whole.gradients.emplace_back();
      continue;
    }
    // A gradient is split as its argument is.
    const Value& argument = g.values[lin.arguments[i]];
    whole.gradients.emplace_back(whole_value(transport, split_of(g, lin.arguments[i]), *mine.gradients[i], argument.type,
                                             "the gradient of argument", i, argument));
  }
  return whole;
}

SimulatedDevices::SimulatedDevices(const Linearization& lin, const Mesh& mesh, const BackendOptions& backends)
    : mesh_(mesh) {
  BackendOptions per_device = backends;
  if (per_device.threads == 0) per_device.threads = 1;
  // Planned one after another: preparing kernels is the plugins' own business, running them on
  // separate arenas at once is not.
  for (int64_t d = 0; d < mesh.num_devices(); ++d) devices_.push_back(std::make_unique<MeshStepRunner>(lin, mesh, per_device));
}

SimulatedDevices::~SimulatedDevices() = default;
SimulatedDevices::SimulatedDevices(SimulatedDevices&&) noexcept = default;
SimulatedDevices& SimulatedDevices::operator=(SimulatedDevices&&) noexcept = default;

GradientResult SimulatedDevices::run(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments) {
  GradientResult whole;
  run_on_simulated_mesh(mesh_, [&](int64_t d) {
    GradientResult result = devices_[static_cast<size_t>(d)]->run(simulated_transport(), constants, arguments);
    if (d == 0) whole = std::move(result);
  });
  return whole;
}

int64_t SimulatedDevices::measured_peak(MemorySpace space) const {
  int64_t most = 0;
  for (const auto& d : devices_) most = std::max(most, d->measured_peak(space));
  return most;
}

MeshRun run_on_simulated_devices(const Linearization& lin, const Mesh& mesh, const BackendOptions& backends,
                                 const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments) {
  SimulatedDevices devices(lin, mesh, backends);
  MeshRun run;
  run.result = devices.run(constants, arguments);
  run.predicted_peak = devices.device(0).layout().arena(MemorySpace::kDevice);
  for (int64_t d = 0; d < devices.devices(); ++d) run.measured_peaks.push_back(devices.device(d).measured_peak(MemorySpace::kDevice));
  return run;
}

}  // namespace rematkit
