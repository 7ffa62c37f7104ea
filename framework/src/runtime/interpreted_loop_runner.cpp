#include "interpreted_loop_runner.hpp"

#include "../interpreter/control_flow.hpp"

namespace rematkit {

void InterpretedLoopRunner::run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport*) const {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < in.size(); ++i) inputs.push_back(read_buffer(loop_.in_types[i], in[i]));
  const std::vector<Tensor> outputs = interpreter::evaluate_control_flow(loop_.interpreted, inputs, Arithmetic::kFloat32);
  for (size_t j = 0; j < out.size(); ++j) write_buffer(outputs[j], out[j]);
}

}  // namespace rematkit
