#include "rematkit/runtime/step_runner.hpp"

#include <tbb/task_arena.h>

#include "step_executor.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/runtime/memory_limit.hpp"

namespace rematkit {
namespace {

// A caller's index into something the program has `count` of; a bad-input Error past the end.
void check_index(size_t count, const char* what, size_t index) {
  if (index >= count)
    fail("the program has " + std::to_string(count) + " " + what + "s; there is no " + what + " " + std::to_string(index));
}

// The caller's tensors against the program's binders: count, shape and element count.
void check_tensors(const char* what, const std::vector<Tensor>& given, const std::vector<ValueId>& values,
                   const FlatGraph& graph) {
  if (given.size() != values.size())
    fail("the program takes " + std::to_string(values.size()) + " " + what + "s, not " + std::to_string(given.size()));
  for (size_t i = 0; i < given.size(); ++i) {
    const Type& expected = graph.values[values[i]].type;
    if (given[i].type.shape != expected.shape || given[i].size() != expected.num_elements())
      fail(std::string(what) + " " + std::to_string(i) + " is " + given[i].type.str() + " where the program has " +
           expected.str());
  }
}

// `program`, once its arena (every memory space) is known to fit in `limit`.
StepProgram within_limit(StepProgram program, std::optional<int64_t> limit) {
  int64_t arena = 0;
  for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost}) arena += program.layout().arena(space);
  check_memory_limit(arena, limit, "the step's predicted peak");
  return program;
}

}  // namespace

struct StepRunner::Threads {
  explicit Threads(int count) : arena(count) {}
  tbb::task_arena arena;
};

StepRunner::StepRunner(StepProgram program, const BackendOptions& backends)
    : program_(std::make_unique<StepProgram>(within_limit(std::move(program), backends.max_memory))),
      executor_(std::make_unique<StepExecutor>(*program_)) {
  if (backends.threads > 0) threads_ = std::make_unique<Threads>(backends.threads);
}

StepRunner::~StepRunner() = default;
StepRunner::StepRunner(StepRunner&&) noexcept = default;
StepRunner& StepRunner::operator=(StepRunner&&) noexcept = default;

int64_t StepRunner::measured_peak(MemorySpace space) const { return measured_peak_[static_cast<size_t>(space)]; }

void StepRunner::time_steps(bool on) { executor_->time_steps(on); }

const std::vector<int64_t>& StepRunner::step_ns() const { return executor_->step_ns(); }

void* StepRunner::buffer_data(int buffer) const { return executor_->data(buffer); }

Tensor StepRunner::read_buffer(int buffer) const { return executor_->read(buffer); }

void StepRunner::run_steps(const RunIo& io, const std::function<void()>& then) {
  auto work = [&] {
    executor_->run(StepIo{io.constants, io.arguments, io.cotangents, io.results, io.transport});
    for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost})
      measured_peak_[static_cast<size_t>(space)] = executor_->high_water(space);
    if (then) then();
  };
  if (threads_) threads_->arena.execute(work);
  else work();
}

OneShotRunner::OneShotRunner(const Linearization& lin, const BackendOptions& backends, Pass last_pass)
    : StepRunner(build_step_program(lin, backends, last_pass, InputMode::kLoadedEachRun), backends) {}

OneShotRunner::OneShotRunner(StepProgram program, const BackendOptions& backends)
    : StepRunner(std::move(program), backends) {
  if (this->program().input_mode() != InputMode::kLoadedEachRun)
    fail("a one-shot runner runs a program that loads its inputs each run, not a resident one");
}

GradientResult OneShotRunner::run(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                                  const std::vector<Tensor>* cotangents) {
  const Linearization& lin = program().linearization();
  check_tensors("constant", constants, lin.constants, lin.graph);
  check_tensors("argument", arguments, lin.arguments, lin.graph);
  if (cotangents) check_tensors("output cotangent", *cotangents, lin.outputs, lin.graph);
  GradientResult result;
  run_steps(RunIo{&constants, &arguments, cotangents, &result}, nullptr);
  return result;
}

ResidentRunner::ResidentRunner(const Linearization& lin, const BackendOptions& backends)
    : StepRunner(build_step_program(lin, backends, Pass::kBackward, InputMode::kResident), backends) {}

namespace {

void write_resident(const Type& planned, const char* what, size_t index, const Tensor& value, void* data) {
  if (value.type.shape != planned.shape || value.size() != planned.num_elements())
    fail(std::string(what) + " " + std::to_string(index) + " has shape " + value.type.str() + " where the program has " +
         planned.str());
  write_buffer(value, data);
}

}  // namespace

void ResidentRunner::write_constant(size_t index, const Tensor& value) {
  check_index(program().linearization().constants.size(), "constant", index);
  const int b = program().constant_buffer(index);
  write_resident(program().buffer_type(b), "constant", index, value, buffer_data(b));
}

void ResidentRunner::write_argument(size_t index, const Tensor& value) {
  check_index(program().linearization().arguments.size(), "argument", index);
  const int b = program().argument_buffer(index);
  write_resident(program().buffer_type(b), "argument", index, value, buffer_data(b));
}

void* ResidentRunner::argument_data(size_t index) {
  check_index(program().linearization().arguments.size(), "argument", index);
  return buffer_data(program().argument_buffer(index));
}

void ResidentRunner::run(const std::function<void()>& then, MeshTransport* transport) {
  run_steps(RunIo{nullptr, nullptr, nullptr, nullptr, transport}, then);
}

const void* ResidentRunner::output_data(size_t index) const {
  check_index(program().output_buffers().size(), "output", index);
  return buffer_data(program().output_buffers()[index]);
}

const void* ResidentRunner::gradient_data(size_t index) const {
  check_index(program().gradient_buffers().size(), "argument", index);
  const int b = program().gradient_buffers()[index];
  return b < 0 ? nullptr : buffer_data(b);
}

Tensor ResidentRunner::read_argument(size_t index) const {
  check_index(program().linearization().arguments.size(), "argument", index);
  return read_buffer(program().argument_buffer(index));
}

Tensor ResidentRunner::read_output(size_t index) const {
  check_index(program().output_buffers().size(), "output", index);
  return read_buffer(program().output_buffers()[index]);
}

std::optional<Tensor> ResidentRunner::read_gradient(size_t index) const {
  check_index(program().gradient_buffers().size(), "argument", index);
  const int b = program().gradient_buffers()[index];
  if (b < 0) return std::nullopt;
  return read_buffer(b);
}

}  // namespace rematkit
