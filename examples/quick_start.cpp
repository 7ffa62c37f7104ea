// Build a model, see what a checkpoint policy keeps and what memory it plans, and train it.
#include <rematkit/rematkit.hpp>
#include <rematkit/flax/model_builder.hpp>

#include <iostream>

int main() try {
  rematkit::ModelBuilder builder;
  for (int layer = 0; layer < 2; ++layer)
    builder.checkpoint("nothing_saveable", [](rematkit::ModelBuilder& b) { b.dense(256).relu(); });
  builder.dense(10);
  const rematkit::Model model = builder.build(/*batch=*/32, /*features=*/64);

  rematkit::PlanOptions options;
  options.backends.preference = {"highway", "reference"};  // in order of preference
  options.differentiate = model.params;         // the params, not the data
  rematkit::Plan plan(model.program, options);
  std::cout << plan.residual_report() << "residual bytes: " << plan.residual_bytes() << "\n";

  rematkit::TrainingStep step = plan.training_step(model.arguments, model.params, /*learning_rate=*/1e-3);
  for (int i = 0; i < 3; ++i) std::cout << "loss " << step.run() << "\n";
  std::cout << "peak bytes: predicted " << step.predicted_peak() << ", measured " << step.measured_peak() << "\n";
} catch (const rematkit::Error& e) {
  std::cerr << "quick_start: " << e.what() << "\n";
  return 2;
}
