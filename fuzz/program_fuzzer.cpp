// Program text through everything `rematkit residuals` does: parse, verify, linearize (with the
// program's own checkpoints, then under a whole-program policy) and the residual report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_guard.hpp"
#include "rematkit/linearize.hpp"
#include "rematkit/parser.hpp"
#include "rematkit/plugin_registry.hpp"
#include "rematkit/residual_report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return rematkit::fuzz::on_text(data, size, [](const std::string& text) {
    const rematkit::Program program = rematkit::parse_program(text, "fuzz.jaxpr");
    for (const char* policy : {"", "nothing_saveable"}) {
      rematkit::LinearizeOptions options;
      options.policies = &rematkit::default_policies();
      options.policy = policy;
      const rematkit::Linearization lin = rematkit::linearize(program, options);
      (void)rematkit::format_residual_report(lin, /*explain=*/true);
    }
  });
}
