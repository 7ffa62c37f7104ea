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
};

namespace {

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

  void build(bool with_backward) {
    const Linearization& lin = plan_.lin_;
    for (size_t i = 0; i < lin.constants.size(); ++i) loadable_[lin.constants[i]] = {Load::Source::kConstant, i, 0.0};
    for (size_t i = 0; i < lin.arguments.size(); ++i) loadable_[lin.arguments[i]] = {Load::Source::kArgument, i, 0.0};
    add_pass(*plan_.forward_, "forward");
    add_readout(lin.outputs, "forward");
    if (!with_backward) return;

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
    add_readout(lin.gradients, "backward");
    for (size_t b = 0; b < buffers_.size(); ++b)
      if (buffers_[b].first_step < backward_start_ && buffers_[b].last_step >= backward_start_) plan_.kept_.push_back(defined_[b]);
  }

  std::vector<BufferRequest> buffers() const { return buffers_; }
  std::vector<Type> buffer_types() const {
    std::vector<Type> types;
    for (ValueId v : defined_) types.push_back(g_.values[v].type);
    return types;
  }

 private:
  int new_buffer(ValueId v, int step) {
    buffers_.push_back(BufferRequest{g_.values[v].type.bytes(), step, step, MemorySpace::kDevice});
    defined_.push_back(v);
    plan_.steps_[static_cast<size_t>(step)].acquire.push_back(static_cast<int>(buffers_.size()) - 1);
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
      plan_.steps_.push_back(Step{&pass.kernel(s), {}, {}, {}, {}});
      for (ValueId v : eqn.inputs) plan_.steps_.back().inputs.push_back(read(v, step, name));
      for (ValueId v : eqn.outputs) plan_.steps_.back().outputs.push_back(new_buffer(v, step));
    }
  }

  void add_readout(const std::vector<ValueId>& values, const char* name) {
    const int step = static_cast<int>(plan_.steps_.size());
    plan_.steps_.emplace_back();
    for (ValueId v : values) plan_.steps_.back().inputs.push_back(v == kNoValue ? -1 : read(v, step, name));
  }

  GradientPlan& plan_;
  const FlatGraph& g_;
  std::vector<int> current_;  // per value: the buffer of its definition in reach, or -1
  std::map<ValueId, Load> loadable_;
  std::vector<BufferRequest> buffers_;
  std::vector<ValueId> defined_;  // per buffer: its value
  int backward_start_ = 0;
};

GradientPlan::GradientPlan(const Linearization& lin, const BackendOptions& backends, Passes passes) : lin_(lin) {
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
  builder.build(with_backward);
  memory_ = plan_memory(builder.buffers());
  buffer_types_ = builder.buffer_types();
  load_of_buffer_.resize(memory_.buffers.size(), -1);  // buffers after the last load are not loads
  for (size_t b = 0; b < memory_.buffers.size(); ++b)
    steps_[static_cast<size_t>(memory_.buffers[b].last_step)].release.push_back(static_cast<int>(b));
  arena_ = std::make_unique<Arena>(memory_);
}

GradientPlan::~GradientPlan() = default;

int64_t GradientPlan::measured_peak(MemorySpace space) const { return measured_peak_[static_cast<size_t>(space)]; }

GradientResult GradientPlan::run(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                                 const std::vector<Tensor>* cotangents) {
  if (threads_ == 0) return run_steps(constants, arguments, cotangents);
  GradientResult result;
  tbb::task_arena(threads_).execute([&] { result = run_steps(constants, arguments, cotangents); });
  return result;
}

GradientResult GradientPlan::run_steps(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                                       const std::vector<Tensor>* cotangents) {
  if (constants.size() != lin_.constants.size() || arguments.size() != lin_.arguments.size())
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
    if (given && given->size() != type.num_elements())
      internal_error("gradient plan: an input has " + std::to_string(given->size()) + " elements where " + type.str() +
                     " was planned");
    const double value = load.source == Load::Source::kLiteral ? load.literal : 1.0;
    write_buffer(given ? *given : Tensor::filled(type, value), arena_->data(buffer));
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
      std::vector<const void*> in;
      std::vector<void*> out;
      for (int b : step.inputs) in.push_back(arena_->data(b));
      for (int b : step.outputs) out.push_back(arena_->data(b));
      step.kernel->execute(in, out);
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

}  // namespace rematkit
