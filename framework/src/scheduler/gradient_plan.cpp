#include "rematkit/gradient_plan.hpp"

#include <algorithm>
#include <map>

#include <tbb/task_arena.h>

#include "rematkit/error.hpp"

namespace rematkit {

// A buffer filled from outside the plan when first acquired.
struct GradientPlan::Load {
  enum class Source { kConstant, kArgument, kCotangentSeed, kLiteral };
  Source source = Source::kLiteral;
  size_t index = 0;  // into the constants, arguments or output cotangents
  double literal = 0.0;
};

struct GradientPlan::Step {
  const PreparedKernel* kernel = nullptr;  // nullptr: a readout, which only reads `inputs`
  std::vector<int> inputs, outputs;        // buffers
  std::vector<int> acquire, release;       // buffers whose lifetime starts / ends at this step
  // The buffers' addresses, fixed by the memory plan, so that a run builds no argument lists.
  std::vector<const void*> input_data;
  std::vector<void*> output_data;
};

struct GradientPlan::TaskArena {
  explicit TaskArena(int threads) : arena(threads) {}
  tbb::task_arena arena;
};

namespace {

void write_scalars(const Type& type, double value, void* data) {
  for (int64_t i = 0; i < type.num_elements(); ++i) {
    switch (type.dtype) {
      case DType::kF32: static_cast<float*>(data)[i] = static_cast<float>(value); break;
      case DType::kI32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(value); break;
      case DType::kBool: static_cast<uint8_t*>(data)[i] = value != 0; break;
    }
  }
}

void write_buffer(const Tensor& t, void* data) {
  for (int64_t i = 0; i < t.size(); ++i) {
    switch (t.type.dtype) {
      case DType::kF32: static_cast<float*>(data)[i] = static_cast<float>(t.data[i]); break;
      case DType::kI32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(t.data[i]); break;
      case DType::kBool: static_cast<uint8_t*>(data)[i] = t.data[i] != 0; break;
    }
  }
}

Tensor read_buffer(const Type& type, const void* data) {
  Tensor t{type, std::vector<double>(static_cast<size_t>(type.num_elements()))};
  for (int64_t i = 0; i < t.size(); ++i) {
    switch (type.dtype) {
      case DType::kF32: t.data[i] = static_cast<const float*>(data)[i]; break;
      case DType::kI32: t.data[i] = static_cast<const int32_t*>(data)[i]; break;
      case DType::kBool: t.data[i] = static_cast<const uint8_t*>(data)[i]; break;
    }
  }
  return t;
}

}  // namespace

// Walks the steps in order, giving every definition of a value its own buffer (a recomputed value
// is defined again in the backward pass) and stretching each buffer's lifetime to its last reader.
class GradientPlan::Builder {
 public:
  explicit Builder(GradientPlan& plan) : plan_(plan), g_(plan.lin_.graph), current_(g_.values.size(), -1) {}

  void build(bool with_backward, bool resident) {
    const Linearization& lin = plan_.lin_;
    for (size_t i = 0; i < lin.constants.size(); ++i) loadable_[lin.constants[i]] = {Load::Source::kConstant, i, 0.0};
    for (size_t i = 0; i < lin.arguments.size(); ++i) loadable_[lin.arguments[i]] = {Load::Source::kArgument, i, 0.0};
    std::vector<int> residents;
    if (resident) {
      // Buffers for every input from the first step; they are stretched to the last step below.
      plan_.resident_of_value_.assign(g_.values.size(), -1);
      for (const auto& inputs : {lin.constants, lin.arguments})
        for (ValueId v : inputs) residents.push_back(plan_.resident_of_value_[v] = new_buffer(v, -1));
      loadable_.clear();
    }
    add_pass(*plan_.forward_, "forward");
    plan_.output_buffers_ = add_readout(lin.outputs, "forward");
    if (with_backward) add_backward();
    const int last_step = static_cast<int>(plan_.steps_.size()) - 1;
    for (int b : residents) {
      buffers_[static_cast<size_t>(b)].first_step = 0;
      buffers_[static_cast<size_t>(b)].last_step = last_step;
      plan_.steps_.front().acquire.push_back(b);
    }
    if (resident)  // outputs stay readable after the run
      for (int b : plan_.output_buffers_) buffers_[static_cast<size_t>(b)].last_step = last_step;
  }

  std::vector<BufferRequest> buffers() const { return buffers_; }
  std::vector<Type> buffer_types() const {
    std::vector<Type> types;
    for (ValueId v : defined_) types.push_back(g_.values[v].type);
    return types;
  }

 private:
  void add_backward() {
    const Linearization& lin = plan_.lin_;

    // The backward pass starts from the residuals and the output cotangents alone.
    // Every residual JAX reports stays alive into the backward pass, even one our transposition
    // never reads (relu's zeros), so that plans account for what JAX keeps.
    backward_start_ = static_cast<int>(plan_.steps_.size());
    std::vector<int> kept(current_.size(), -1);
    for (const Residual& r : lin.residuals) {
      const int buffer = kept[r.value] = current_[r.value];
      if (buffer < 0) continue;
      buffers_[buffer].last_step = std::max(buffers_[buffer].last_step, backward_start_);
      if (r.type.space != MemorySpace::kDevice) buffers_[buffer].space = r.type.space;
    }
    current_ = std::move(kept);
    std::map<ValueId, Load> given_residuals;  // kept arguments the forward pass never read
    for (const Residual& r : lin.residuals)
      if (current_[r.value] < 0 && loadable_.count(r.value)) given_residuals[r.value] = loadable_[r.value];
    loadable_ = std::move(given_residuals);
    for (size_t i = 0; i < lin.cotangent_seeds.size(); ++i)
      if (lin.cotangent_seeds[i] != kNoValue) loadable_[lin.cotangent_seeds[i]] = {Load::Source::kCotangentSeed, i, 0.0};
    add_pass(*plan_.backward_, "backward");
    plan_.gradient_buffers_ = add_readout(lin.gradients, "backward");
    // Resident inputs are stretched over the whole step only after this: they count as kept when
    // a residual, not merely for being resident.
    for (size_t b = 0; b < buffers_.size(); ++b)
      if (buffers_[b].first_step < backward_start_ && buffers_[b].last_step >= backward_start_) plan_.kept_.push_back(defined_[b]);
  }

  // A buffer for v's definition at `step` (-1: a resident input, placed by build()).
  int new_buffer(ValueId v, int step) {
    buffers_.push_back(BufferRequest{g_.values[v].type.bytes(), std::max(step, 0), std::max(step, 0), MemorySpace::kDevice});
    defined_.push_back(v);
    if (step >= 0) plan_.steps_[static_cast<size_t>(step)].acquire.push_back(static_cast<int>(buffers_.size()) - 1);
    return current_[v] = static_cast<int>(buffers_.size()) - 1;
  }

  int read(ValueId v, int step, const char* pass) {
    if (current_[v] < 0) {
      const Value& value = g_.values[v];
      Load load;
      if (value.origin == ValueOrigin::kLiteral) load.literal = value.literal;
      else if (auto it = loadable_.find(v); it != loadable_.end()) load = it->second;
      else
        internal_error(std::string("the ") + pass + " pass reads a value of type " + value.type.str() +
                       " that it neither computes nor is given");
      plan_.load_of_buffer_.resize(buffers_.size() + 1, -1);
      plan_.load_of_buffer_.back() = static_cast<int>(plan_.loads_.size());
      plan_.loads_.push_back(load);
      new_buffer(v, step);
    }
    BufferRequest& b = buffers_[static_cast<size_t>(current_[v])];
    b.last_step = std::max(b.last_step, step);
    return current_[v];
  }

  void add_pass(const BackendPlan& pass, const char* name) {
    for (size_t s = 0; s < pass.equations().size(); ++s) {
      const FlatEquation& eqn = g_.eqns[pass.equations()[s]];
      const int step = static_cast<int>(plan_.steps_.size());
      plan_.steps_.emplace_back();
      plan_.steps_.back().kernel = &pass.kernel(s);
      for (ValueId v : eqn.inputs) plan_.steps_.back().inputs.push_back(read(v, step, name));
      for (ValueId v : eqn.outputs) plan_.steps_.back().outputs.push_back(new_buffer(v, step));
    }
  }

  std::vector<int> add_readout(const std::vector<ValueId>& values, const char* name) {
    const int step = static_cast<int>(plan_.steps_.size());
    plan_.steps_.emplace_back();
    for (ValueId v : values) plan_.steps_.back().inputs.push_back(v == kNoValue ? -1 : read(v, step, name));
    return plan_.steps_.back().inputs;
  }

  GradientPlan& plan_;
  const FlatGraph& g_;
  std::vector<int> current_;  // per value: the buffer of its definition in reach, or -1
  std::map<ValueId, Load> loadable_;
  std::vector<BufferRequest> buffers_;
  std::vector<ValueId> defined_;  // per buffer: its value
  int backward_start_ = 0;
};

GradientPlan::GradientPlan(const Linearization& lin, const BackendOptions& backends, Passes passes, Inputs inputs)
    : lin_(lin), inputs_(inputs) {
  const PluginRegistry& plugins = backends.plugins ? *backends.plugins : default_plugins();
  if (backends.threads < 0) fail("the number of threads must be at least 1 (or 0 for every core), not " + std::to_string(backends.threads));
  threads_ = backends.threads;
  Params options;
  if (threads_ > 0) options.set("num_threads", ParamValue::of_int(threads_));
  forward_ = std::make_unique<BackendPlan>(lin.graph, lin.forward, plugins, backends.preference, options);
  const bool with_backward = passes == Passes::kForwardAndBackward;
  if (with_backward)
    backward_ = std::make_unique<BackendPlan>(lin.graph, lin.backward, plugins, backends.preference, options);
  Builder builder(*this);
  builder.build(with_backward, inputs == Inputs::kResident);
  memory_ = plan_memory(builder.buffers());
  buffer_types_ = builder.buffer_types();
  load_of_buffer_.resize(memory_.buffers.size(), -1);  // buffers after the last load are not loads
  for (size_t b = 0; b < memory_.buffers.size(); ++b)
    steps_[static_cast<size_t>(memory_.buffers[b].last_step)].release.push_back(static_cast<int>(b));
  arena_ = std::make_unique<Arena>(memory_);
  for (Step& step : steps_) {
    for (int b : step.inputs) step.input_data.push_back(b < 0 ? nullptr : arena_->data(b));
    for (int b : step.outputs) step.output_data.push_back(arena_->data(b));
  }
  if (threads_ > 0) task_arena_ = std::make_unique<TaskArena>(threads_);
}

GradientPlan::~GradientPlan() = default;
GradientPlan::GradientPlan(GradientPlan&&) noexcept = default;

int64_t GradientPlan::measured_peak(MemorySpace space) const { return measured_peak_[static_cast<size_t>(space)]; }

void GradientPlan::in_arena(const std::function<void()>& work) {
  if (task_arena_) task_arena_->arena.execute(work);
  else work();
}

GradientResult GradientPlan::run(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                                 const std::vector<Tensor>* cotangents) {
  if (inputs_ == Inputs::kResident) internal_error("gradient plan: run() on a plan with resident inputs");
  GradientResult result;
  in_arena([&] { result = run_steps(constants, arguments, cotangents); });
  return result;
}

void GradientPlan::run_resident(const std::function<void()>& then) {
  require_resident("run_resident");
  in_arena([&] {
    run_steps({}, {}, nullptr);
    if (then) then();
  });
}

GradientResult GradientPlan::run_steps(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                                       const std::vector<Tensor>* cotangents) {
  const bool resident = inputs_ == Inputs::kResident;
  if (!resident && (constants.size() != lin_.constants.size() || arguments.size() != lin_.arguments.size()))
    internal_error("gradient plan: wrong number of constants or arguments");
  if (cotangents && cotangents->size() != lin_.outputs.size()) internal_error("gradient plan: wrong number of cotangents");
  auto fill = [&](int buffer) {
    const Load& load = loads_[static_cast<size_t>(load_of_buffer_[static_cast<size_t>(buffer)])];
    const Type& type = buffer_types_[static_cast<size_t>(buffer)];
    const Tensor* given = nullptr;
    switch (load.source) {
      case Load::Source::kConstant: given = &constants[load.index]; break;
      case Load::Source::kArgument: given = &arguments[load.index]; break;
      case Load::Source::kCotangentSeed: given = cotangents ? &cotangents->at(load.index) : nullptr; break;
      case Load::Source::kLiteral: break;
    }
    if (!given) return write_scalars(type, load.source == Load::Source::kLiteral ? load.literal : 1.0, arena_->data(buffer));
    if (given->size() != type.num_elements())
      internal_error("gradient plan: an input has " + std::to_string(given->size()) + " elements where " + type.str() +
                     " was planned");
    write_buffer(*given, arena_->data(buffer));
  };

  GradientResult result;
  bool forward_read_out = false;
  arena_->reset_marks();
  for (const Step& step : steps_) {
    for (int b : step.acquire) {
      arena_->acquire(b);
      if (load_of_buffer_[static_cast<size_t>(b)] >= 0) fill(b);
    }
    if (step.kernel) {
      step.kernel->execute(step.input_data, step.output_data);
    } else if (resident) {
      // Results stay where they are: output_data() and gradient_data() point at them.
    } else if (!forward_read_out) {
      for (int b : step.inputs) result.outputs.push_back(read_buffer(buffer_types_[static_cast<size_t>(b)], arena_->data(b)));
      forward_read_out = true;
    } else {
      for (int b : step.inputs) {
        if (b < 0) result.gradients.emplace_back();
        else result.gradients.emplace_back(read_buffer(buffer_types_[static_cast<size_t>(b)], arena_->data(b)));
      }
    }
    for (int b : step.release) arena_->release(b);
  }
  for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost})
    measured_peak_[static_cast<size_t>(space)] = arena_->high_water(space);
  return result;
}

void GradientPlan::checked_index(size_t count, const char* what, size_t index) {
  if (index >= count)
    fail("the program has " + std::to_string(count) + " " + what + "s; there is no " + what + " " + std::to_string(index));
}

void GradientPlan::require_resident(const char* what) const {
  if (inputs_ != Inputs::kResident) internal_error(std::string("gradient plan: ") + what + " needs resident inputs");
}

int GradientPlan::resident_buffer(const std::vector<ValueId>& values, const char* what, size_t index) const {
  require_resident(what);
  checked_index(values.size(), what, index);
  const int buffer = resident_of_value_.at(values[index]);
  if (buffer < 0) internal_error("gradient plan: " + std::string(what) + " " + std::to_string(index) + " has no buffer");
  return buffer;
}

void GradientPlan::write_resident(const std::vector<ValueId>& values, const char* what, size_t index, const Tensor& value) {
  const int b = resident_buffer(values, what, index);
  const Type& planned = buffer_types_[static_cast<size_t>(b)];
  if (value.type.shape != planned.shape || value.size() != planned.num_elements())
    fail(std::string(what) + " " + std::to_string(index) + " has shape " + value.type.str() + " where the program has " +
         planned.str());
  write_buffer(value, arena_->data(b));
}

void GradientPlan::write_constant(size_t index, const Tensor& value) { write_resident(lin_.constants, "constant", index, value); }

void GradientPlan::write_argument(size_t index, const Tensor& value) { write_resident(lin_.arguments, "argument", index, value); }

void* GradientPlan::argument_data(size_t index) {
  return arena_->data(resident_buffer(lin_.arguments, "argument", index));
}

const void* GradientPlan::output_data(size_t index) const {
  require_resident("output_data");
  checked_index(output_buffers_.size(), "output", index);
  return arena_->data(output_buffers_[index]);
}

const void* GradientPlan::gradient_data(size_t index) const {
  require_resident("gradient_data");
  if (!backward_) internal_error("gradient plan: gradient_data on a forward-only plan");
  checked_index(gradient_buffers_.size(), "argument", index);
  const int b = gradient_buffers_[index];
  return b < 0 ? nullptr : arena_->data(b);
}

Tensor GradientPlan::read_argument(size_t index) const {
  const int b = resident_buffer(lin_.arguments, "argument", index);
  return read_buffer(buffer_types_[static_cast<size_t>(b)], arena_->data(b));
}

Tensor GradientPlan::read_output(size_t index) const {
  const void* data = output_data(index);
  return read_buffer(buffer_types_[static_cast<size_t>(output_buffers_[index])], data);
}

std::optional<Tensor> GradientPlan::read_gradient(size_t index) const {
  const void* data = gradient_data(index);
  if (!data) return std::nullopt;
  return read_buffer(buffer_types_[static_cast<size_t>(gradient_buffers_[index])], data);
}

}  // namespace rematkit
