#include "rematkit/autodiff/gradient.hpp"

#include <functional>

#include "flat_eval.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/interpreter/simulated_mesh.hpp"
#include "rematkit/autodiff/residual_report.hpp"

namespace rematkit {
namespace {

// Values of one pass. Literals are available everywhere; anything else must have been computed
// or handed over, which is how a residual set that is too small shows up.
class Environment {
 public:
  explicit Environment(const FlatGraph& g) : g_(g), slots_(g.values.size()) {}

  void set(ValueId v, Tensor t) { slots_[v] = std::move(t); }
  std::vector<std::optional<Tensor>>& slots() { return slots_; }
  bool has(ValueId v) const { return slots_[v].has_value(); }
  const Tensor& get(ValueId v, const char* pass) { return autodiff::read_value(g_, slots_, v, pass); }

  void run(const std::vector<int>& eqns, Arithmetic arithmetic, const char* pass) {
    autodiff::evaluate_flat(g_, eqns, slots_, arithmetic, pass);
  }

 private:
  const FlatGraph& g_;
  std::vector<std::optional<Tensor>> slots_;
};

// Runs a pass's equations on `env`.
using PassRunner = std::function<void(const std::vector<int>& eqns, Environment& env, const char* pass)>;

GradientResult run_passes(const Linearization& lin, const std::vector<Tensor>& constants,
                          const std::vector<Tensor>& arguments, const PassRunner& run_pass,
                          const std::vector<Tensor>* cotangents) {
  const FlatGraph& g = lin.graph;
  if (constants.size() != lin.constants.size() || arguments.size() != lin.arguments.size())
    fail("run_gradient: the program takes " + std::to_string(lin.constants.size()) + " constants and " +
         std::to_string(lin.arguments.size()) + " arguments, not " + std::to_string(constants.size()) + " and " +
         std::to_string(arguments.size()));
  Environment forward(g);
  for (size_t i = 0; i < constants.size(); ++i) forward.set(lin.constants[i], constants[i]);
  for (size_t i = 0; i < arguments.size(); ++i) forward.set(lin.arguments[i], arguments[i]);
  run_pass(lin.forward, forward, "forward");

  GradientResult result;
  for (ValueId v : lin.outputs) result.outputs.push_back(forward.get(v, "forward"));

  // The backward pass sees only the residuals and the output cotangents.
  Environment backward(g);
  for (const Residual& r : lin.residuals) backward.set(r.value, forward.get(r.value, "forward"));
  for (size_t i = 0; i < lin.cotangent_seeds.size(); ++i) {
    if (lin.cotangent_seeds[i] == kNoValue) continue;
    const Type& t = g.values[lin.outputs[i]].type;
    backward.set(lin.cotangent_seeds[i], cotangents ? cotangents->at(i) : Tensor::filled(t, 1.0));
  }
  run_pass(lin.backward, backward, "backward");
  for (ValueId grad : lin.gradients) {
    if (grad == kNoValue) result.gradients.emplace_back();
    else result.gradients.emplace_back(backward.get(grad, "backward"));
  }
  return result;
}

}  // namespace

GradientResult interpret_gradient(const Linearization& lin, const std::vector<Tensor>& constants,
                                  const std::vector<Tensor>& arguments, Arithmetic arithmetic,
                            const std::vector<Tensor>* cotangents) {
  auto run = [&] {
    return run_passes(
        lin, constants, arguments,
        [arithmetic](const std::vector<int>& eqns, Environment& env, const char* pass) { env.run(eqns, arithmetic, pass); },
        cotangents);
  };
  if (!lin.graph.mesh) return run();
  // Every device runs the whole step: a value outside the shard_maps is the same on each, its
  // cotangent the whole one (collective_transpose_rules.hpp), so the first device's is the answer.
  GradientResult result;
  run_on_simulated_mesh(*lin.graph.mesh, [&](int64_t device) {
    GradientResult mine = run();
    if (device == 0) result = std::move(mine);
  });
  return result;
}

}  // namespace rematkit
