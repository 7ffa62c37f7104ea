#include "rematkit/training_step.hpp"

#include "rematkit/error.hpp"

namespace rematkit {

TrainingStep::TrainingStep(const Linearization& lin, const BackendOptions& backends, std::vector<size_t> trained,
                           double learning_rate)
    : plan_(lin, backends), trained_(std::move(trained)), learning_rate_(static_cast<float>(learning_rate)) {
  if (lin.outputs.size() != 1 || lin.graph.values[lin.outputs[0]].type.dtype != DType::kF32 ||
      !lin.graph.values[lin.outputs[0]].type.shape.empty()) {
    std::string outputs;
    for (ValueId v : lin.outputs) outputs += (outputs.empty() ? "" : ", ") + lin.graph.values[v].type.str();
    fail("a training step needs a program whose one output is an f32[] loss, not (" + outputs + ")");
  }
  for (size_t a : trained_)
    if (a >= lin.arguments.size() || lin.argument_tangents[a] == kNoValue)
      fail("argument " + std::to_string(a) + " cannot be trained: it is not a floating argument the program is differentiated with respect to");
}

GradientResult TrainingStep::run(const std::vector<Tensor>& constants, std::vector<Tensor>& arguments) {
  GradientResult result = plan_.run(constants, arguments);
  for (size_t a : trained_) {
    const Tensor& grad = *result.gradients.at(a);
    std::vector<double>& param = arguments[a].data;
    // f32 SGD, as an f32 optimizer computes it: the product rounded, then the difference.
    for (size_t i = 0; i < param.size(); ++i)
      param[i] = static_cast<float>(static_cast<float>(param[i]) - learning_rate_ * static_cast<float>(grad.data[i]));
  }
  return result;
}

}  // namespace rematkit
