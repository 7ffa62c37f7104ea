#include "mapped_call.hpp"

#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/interpreter/simulated_mesh.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/primitive.hpp"

namespace rematkit::interpreter {

// Each device takes its block of every operand (shard_map_in), runs the body, and the results
// are joined from every device's block (shard_map_out), which leaves each device with the whole
// value: the first device's is returned.
std::vector<Tensor> evaluate_mapped_call(const Equation& eqn, const std::vector<Tensor>& inputs, Arithmetic arithmetic) {
  const Mesh mesh = mapped_call_mesh(eqn);
  const Program& body = *eqn.params.find(std::string(body_param(eqn.prim)))->program;
  const std::vector<MappedValue> ins = mapped_call_values(eqn, false, inputs.size());
  const std::vector<MappedValue> outs = mapped_call_values(eqn, true, body.outvars.size());
  std::vector<Tensor> results(outs.size());
  run_on_simulated_mesh(mesh, [&](int64_t device) {
    std::vector<Tensor> consts, args;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Params p = mapped_value_params(ins[i], mesh, eqn.where);
      Tensor block = run_collective(Prim::kShardMapIn, p, {&inputs[i]},
                                    infer_types(Prim::kShardMapIn, p, {inputs[i].type}, eqn.where).at(0), arithmetic);
      if (ins[i].squeezed >= 0) block.type.shape.erase(block.type.shape.begin() + ins[i].squeezed);
      (i < body.constvars.size() ? consts : args).push_back(std::move(block));
    }
    std::vector<Tensor> local = evaluate_program(body, consts, args, arithmetic);
    for (size_t k = 0; k < local.size(); ++k) {
      if (outs[k].squeezed >= 0) local[k].type.shape.insert(local[k].type.shape.begin() + outs[k].squeezed, 1);
      const Params p = mapped_value_params(outs[k], mesh, eqn.where);
      Tensor whole = run_collective(Prim::kShardMapOut, p, {&local[k]},
                                    infer_types(Prim::kShardMapOut, p, {local[k].type}, eqn.where).at(0), arithmetic);
      if (device == 0) results[k] = std::move(whole);
    }
  });
  return results;
}

}  // namespace rematkit::interpreter
