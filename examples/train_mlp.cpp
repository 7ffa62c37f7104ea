// Trains a 3-layer MLP with a checkpoint around each layer for a few SGD steps and prints the loss
// and the predicted and measured peak memory of a step.
//   train_mlp [POLICY [STEPS]]     e.g. train_mlp dots_with_no_batch_dims_saveable 5
#include <rematkit/rematkit.hpp>
#include <rematkit/flax/model_builder.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv) try {
  const std::string policy = argc > 1 ? argv[1] : "nothing_saveable";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 5;
  if (steps < 1) throw rematkit::Error(rematkit::ErrorKind::kBadInput, "STEPS must be a positive number");

  rematkit::ModelBuilder builder;
  builder.checkpoint(policy, [](rematkit::ModelBuilder& b) { b.dense(512).relu(); })
      .checkpoint(policy, [](rematkit::ModelBuilder& b) { b.dense(512).relu(); })
      .checkpoint(policy, [](rematkit::ModelBuilder& b) { b.dense(16); });
  const rematkit::Model model = builder.build(/*batch=*/64, /*features=*/256, /*seed=*/0);

  rematkit::PlanOptions options;  // every installed backend, fastest first
  options.differentiate = model.params;
  rematkit::Plan plan(model.program, options);
  rematkit::TrainingStep step = plan.training_step(model.arguments, model.params, /*learning_rate=*/2e-4);

  std::cout << "policy " << policy << ": " << plan.residual_bytes() << " residual bytes\n";
  for (int i = 1; i <= steps; ++i) std::cout << "step " << i << ": loss " << step.run() << "\n";
  std::cout << "peak device memory: predicted " << step.predicted_peak() << " bytes, measured " << step.measured_peak()
            << " bytes\n";
} catch (const rematkit::Error& e) {
  std::cerr << "train_mlp: " << e.what() << "\n";
  return 2;
}
