// A sweep file up to its built grid: parsed, checked against the installed plugins (every
// policy, backend and program model, as `rematkit sweep` checks before it runs anything), then
// its groups and their names. Its `plugins:` files are not loaded: loading libraries is the
// policy plugin target's part.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_guard.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_checks.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_runner.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return rematkit::fuzz::on_text(data, size, [](const std::string& text) {
    const rematkit::sweep::SweepConfig config = rematkit::sweep::parse_sweep(text, "fuzz.yaml");
    if (!config.plugins.empty()) return;
    rematkit::sweep::check_sweep(config, rematkit::default_plugins());
    size_t rows = 0;
    for (const rematkit::sweep::SweepGroup& group : rematkit::sweep::sweep_groups(config)) {
      (void)rematkit::sweep::group_name(config, group);
      rows += config.policies.size();
    }
    if (rows != rematkit::sweep::grid_size(config)) std::abort();  // the groups cover the grid
  });
}
