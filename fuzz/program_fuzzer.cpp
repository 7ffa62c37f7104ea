// Program text through everything `rematkit residuals` does: parse, verify, linearize (with the
// program's own checkpoints, then under a whole-program policy) and the residual report; then,
// for a small program, its gradient run on highway with every fusion and with none, which must
// give the same bits (fusion_steps.hpp): a difference is a finding, as a crash is.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_guard.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/runtime/step_runner.hpp"

namespace {

// Small enough to run thousands a second, and with no PRNG key (a key needs real words).
bool small_and_plain(const rematkit::Linearization& lin) {
  int64_t bytes = 0;
  for (const rematkit::Value& v : lin.graph.values) {
    if (v.type.dtype == rematkit::DType::kKeyFry) return false;
    bytes += v.type.bytes();
  }
  return bytes <= (int64_t{1} << 16);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void fused_equals_unfused(const rematkit::Linearization& lin) {
  if (!small_and_plain(lin)) return;
  std::vector<rematkit::Tensor> constants, arguments;
  for (rematkit::ValueId v : lin.constants) constants.push_back(rematkit::Tensor::filled(lin.graph.values[v].type, 0.75));
  for (rematkit::ValueId v : lin.arguments) arguments.push_back(rematkit::Tensor::filled(lin.graph.values[v].type, 0.5));
  rematkit::BackendOptions fused{{"highway", "reference"}, &rematkit::default_plugins()};
  rematkit::BackendOptions unfused = fused;
  unfused.fusion = rematkit::BackendOptions::Fusion::kOff;
  const rematkit::GradientResult a =
      rematkit::OneShotRunner(rematkit::build_step_program(lin, fused, rematkit::Pass::kBackward,
                                                           rematkit::InputMode::kLoadedEachRun, rematkit::FusionChoice{}),
                              fused)
          .run(constants, arguments);
  const rematkit::GradientResult b = rematkit::OneShotRunner(lin, unfused).run(constants, arguments);
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if (!same_bits(a.outputs[i].data, b.outputs[i].data)) __builtin_trap();
  for (size_t i = 0; i < a.gradients.size(); ++i)
    if (a.gradients[i] && !same_bits(a.gradients[i]->data, b.gradients[i]->data)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return rematkit::fuzz::on_text(data, size, [](const std::string& text) {
    const rematkit::Program program = rematkit::parse_program(text, "fuzz.jaxpr");
    for (const char* policy : {"", "nothing_saveable"}) {
      rematkit::LinearizeOptions options;
      options.policies = &rematkit::default_policies();
      options.policy = policy;
      const rematkit::Linearization lin = rematkit::linearize(program, options);
      (void)rematkit::format_residual_report(lin, /*explain=*/true);
      fused_equals_unfused(lin);
    }
  });
}
