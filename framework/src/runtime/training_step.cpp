#include "rematkit/runtime/training_step.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "rematkit/ir/error.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/reference_math/element_values.hpp"
#include "rematkit/interpreter/mesh_transport.hpp"
#include "rematkit/interpreter/simulated_mesh.hpp"
#include "rematkit/runtime/mesh_step_runner.hpp"
#include "rematkit/runtime/step_runner.hpp"

namespace rematkit {

TrainingStep::TrainingStep(const Linearization& lin, const BackendOptions& backends, std::vector<size_t> trained,
                           double learning_rate)
    : trained_(std::move(trained)), learning_rate_(static_cast<float>(learning_rate)) {
  start(lin, backends, lin.graph.mesh ? lin.graph.mesh->num_devices() : 1);
}

TrainingStep::TrainingStep(const Linearization& lin, const BackendOptions& backends, std::vector<size_t> trained,
                           double learning_rate, MeshTransport& transport)
    : trained_(std::move(trained)), learning_rate_(static_cast<float>(learning_rate)), transport_(&transport) {
  if (!lin.graph.mesh || lin.graph.mesh->num_devices() != transport.mesh().num_devices())
    internal_error("a training step as one device of a mesh needs a program placed on the transport's mesh");
  start(lin, backends, 1);
}

void TrainingStep::start(const Linearization& lin, const BackendOptions& backends, int64_t runners) {
  if (lin.outputs.size() != 1 || !is_floating(lin.graph.values[lin.outputs[0]].type.dtype) ||
      !lin.graph.values[lin.outputs[0]].type.shape.empty()) {
    std::string outputs;
    for (ValueId v : lin.outputs) outputs += (outputs.empty() ? "" : ", ") + lin.graph.values[v].type.str();
    fail("a training step needs a program whose one output is a floating scalar loss (f32[]), not (" + outputs + ")");
  }
  for (size_t a : trained_)
    if (a >= lin.arguments.size() || lin.gradients[a] == kNoValue ||
        !is_floating(lin.graph.values[lin.arguments[a]].type.dtype))
      fail("argument " + std::to_string(a) +
           " cannot be trained: it is not a floating argument the program is differentiated with respect to");
  lin_ = std::make_unique<Linearization>(lin);  // the step's own: the caller's may go first
  for (int64_t d = 0; d < runners; ++d) runners_.push_back(std::make_unique<ResidentRunner>(*lin_, backends));
}

int64_t TrainingStep::device_of(size_t runner) const { return transport_ ? transport_->device() : static_cast<int64_t>(runner); }

TrainingStep::~TrainingStep() = default;
TrainingStep::TrainingStep(TrainingStep&&) noexcept = default;
TrainingStep& TrainingStep::operator=(TrainingStep&&) noexcept = default;

Tensor TrainingStep::argument(size_t index) const { return runners_[0]->read_argument(index); }

std::optional<Tensor> TrainingStep::gradient(size_t index) const { return runners_[0]->read_gradient(index); }

const ArenaLayout& TrainingStep::layout() const { return runners_[0]->layout(); }

void TrainingStep::time_steps(bool on) {
  for (const auto& r : runners_) r->time_steps(on);
}

int64_t TrainingStep::measured_peak(MemorySpace space) const {
  int64_t most = 0;
  for (const auto& r : runners_) most = std::max(most, r->measured_peak(space));
  return most;
}

TrainingStep::TrainingStep(const Linearization& lin, const BackendOptions& backends, std::vector<size_t> trained,
                           double learning_rate, const std::vector<Tensor>& arguments, const std::vector<Tensor>& constants)
    : TrainingStep(lin, backends, std::move(trained), learning_rate) {
  set_constants(constants);
  set_arguments(arguments);
}

void TrainingStep::set_constants(const std::vector<Tensor>& constants) {
  if (constants.size() != lin_->constants.size())
    fail("the program has " + std::to_string(lin_->constants.size()) + " constants, not " + std::to_string(constants.size()));
  for (size_t i = 0; i < constants.size(); ++i)
    for (size_t d = 0; d < runners_.size(); ++d)
      runners_[d]->write_constant(
          i, lin_->graph.mesh ? device_block_of(*lin_, lin_->constants[i], *lin_->graph.mesh, device_of(d), constants[i],
                                                "constant", i)
                              : constants[i]);
}

void TrainingStep::set_arguments(const std::vector<Tensor>& arguments) {
  if (arguments.size() != lin_->arguments.size())
    fail("the program has " + std::to_string(lin_->arguments.size()) + " arguments, not " + std::to_string(arguments.size()));
  for (size_t i = 0; i < arguments.size(); ++i) set_argument(i, arguments[i]);
}

void TrainingStep::set_argument(size_t index, const Tensor& value) {
  if (!lin_->graph.mesh) return runners_[0]->write_argument(index, value);
  if (index >= lin_->arguments.size())
    fail("the program has " + std::to_string(lin_->arguments.size()) + " arguments; there is no argument " + std::to_string(index));
  for (size_t d = 0; d < runners_.size(); ++d)
    runners_[d]->write_argument(index, device_block_of(*lin_, lin_->arguments[index], *lin_->graph.mesh, device_of(d),
                                                       value, "argument", index));
}

float* TrainingStep::argument_f32(size_t index) {
  if (runners_.size() > 1 || transport_) fail("argument_f32: on a mesh each device holds its own block: set_argument writes them");
  const Linearization& lin = *lin_;
  if (index >= lin.arguments.size() || lin.graph.values[lin.arguments[index]].type.dtype != DType::kF32)
    fail("argument " + std::to_string(index) + " is not an f32 argument of the program");
  return static_cast<float*>(runners_[0]->argument_data(index));
}

float TrainingStep::run() {
  if (transport_) {
    runners_[0]->run([this] { update(*runners_[0]); }, transport_);
  } else if (runners_.size() == 1) {
    runners_[0]->run([this] { update(*runners_[0]); });
  } else {
    run_on_simulated_mesh(*lin_->graph.mesh, [this](int64_t d) {
      ResidentRunner& device = *runners_[static_cast<size_t>(d)];
      device.run([&] { update(device); }, &simulated_transport());
    });
  }
  return static_cast<float>(reference::load_element(runners_[0]->output_data(0),
                                                    dtype_code(lin_->graph.values[lin_->outputs[0]].type.dtype), 0));
}

namespace {

// Chunks of elements are independent, so any split gives the same bits. Below kParallelFrom
// elements one thread updates: a small weight's update in parallel made the whole step slower
// (measured with rematkit_step_timing; docs/performance.md, "Measurements behind choices in the code").
template <class Update>
void in_chunks(size_t n, const Update& update) {
  constexpr size_t kGrain = size_t{1} << 15, kParallelFrom = size_t{1} << 20;
  if (n < kParallelFrom) return update(size_t{0}, n);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, kGrain),
                    [&](const tbb::blocked_range<size_t>& r) { update(r.begin(), r.end()); });
}

// f32 SGD, as an f32 optimizer computes it: the product rounded, then the difference.
void sgd_f32(float* param, const float* grad, size_t n, float lr) {
  in_chunks(n, [=](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const float step = lr * grad[i];
      param[i] = param[i] - step;
    }
  });
}

// bf16 params: the same f32 arithmetic on the widened values, rounded to nearest even on store
// (reference::store_element's rounding: f32 is wide enough that its difference, rounded once to
// f32, is what the exact difference rounds to).
void sgd_bf16(uint16_t* param, const uint16_t* grad, size_t n, float lr) {
  in_chunks(n, [=](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const float step = lr * reference::bf16_value(grad[i]);
      param[i] = reference::bf16_bits(reference::bf16_value(param[i]) - step);
    }
  });
}

}  // namespace

void TrainingStep::update(ResidentRunner& runner) {
  const Linearization& lin = *lin_;
  for (size_t a : trained_) {
    const Value& value = lin.graph.values[lin.arguments[a]];
    const Type& type = value.type;
    // One device's block on a mesh (device_type copies the shape: a warm step off a mesh allocates nothing).
    const size_t elements =
        static_cast<size_t>(value.tiles.empty() ? type.num_elements() : device_type(value).num_elements());
    void* param = runner.argument_data(a);
    const void* grad = runner.gradient_data(a);
    if (type.dtype == DType::kF32) {
      sgd_f32(static_cast<float*>(param), static_cast<const float*>(grad), elements, learning_rate_);
    } else if (type.dtype == DType::kBF16) {
      sgd_bf16(static_cast<uint16_t*>(param), static_cast<const uint16_t*>(grad), elements, learning_rate_);
    } else {  // f16, f64: in f32 (f64 for f64), rounded on store
      const int32_t code = dtype_code(type.dtype);
      const DType arithmetic = type.dtype == DType::kF64 ? DType::kF64 : DType::kF32;
      for (size_t i = 0; i < elements; ++i) {
        const double step = round_to_dtype(learning_rate_ * reference::load_element(grad, code, i), arithmetic,
                                           Arithmetic::kFloat32);
        reference::store_element(param, code, i, reference::load_element(param, code, i) - step);
      }
    }
  }
}

}  // namespace rematkit
