#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "rematkit/sweep/sweep_chart.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_output.hpp"
#include "rematkit/sweep/sweep_runner.hpp"

namespace rematkit::cli {
namespace {

struct SweepOptions {
  PluginOptions plugins;
  std::string file;
};

// A bar redrawn in place on a terminal; one line per configuration otherwise (logs, CI).
void report_progress(size_t done, size_t total, const sweep::SweepRow& next) {
  const std::string what = next.model + " " + next.policy + " on " + next.backend + ", " + std::to_string(next.threads) +
                           " thread(s)";
  if (isatty(STDERR_FILENO)) {
    const size_t filled = total ? 30 * done / total : 30;
    std::fprintf(stderr, "\r\033[K[%s%s] %zu/%zu %s", std::string(filled, '#').c_str(),
                 std::string(30 - filled, '.').c_str(), done + 1, total, what.c_str());
  } else {
    std::fprintf(stderr, "rematkit sweep: %zu/%zu %s\n", done + 1, total, what.c_str());
  }
}

void run_sweep_command(const SweepOptions& o) {
  const sweep::SweepConfig config =
      o.file.empty() ? sweep::parse_sweep(sweep::default_sweep_yaml(), "<default sweep>") : sweep::load_sweep(o.file);
  const std::vector<sweep::SweepRow> rows = sweep::run_sweep(config, command_plugins(o.plugins), report_progress);
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
  std::cout << sweep::format_table(rows) << std::flush;
  if (!config.csv.empty()) sweep::write_file(config.csv, sweep::format_csv(rows));
  if (!config.json.empty()) sweep::write_file(config.json, sweep::format_json(rows));
  if (!config.charts.empty()) {
    std::error_code ignored;  // write_file names the folder if it still cannot be written
    std::filesystem::create_directories(config.charts, ignored);
    for (const sweep::ModelSpec& model : config.models)
      sweep::write_file((std::filesystem::path(config.charts) / sweep::chart_file_name(model.name)).string(),
                        sweep::format_svg(rows, model.name));
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "time and measure models x policies x backends x threads");
  cmd->footer(
      "Runs every configuration of a YAML sweep file (without FILE, the default sweep built in from\n"
      "sweep/default_sweep.yaml): each is planned once, warmed up once and timed `repetitions` times, one at a\n"
      "time. Prints a table: median/min/max step time, predicted and measured peak bytes per memory space,\n"
      "residual bytes, FLOPs of the forward, the recomputation and the backward, and the largest gradient\n"
      "difference from everything_saveable on the same backend (0 when remat is right). `outputs: {csv: PATH,\n"
      "json: PATH, charts: DIR}` in the file writes the same rows there, and DIR/MODEL.svg per model (step time\n"
      "against peak memory, Pareto front marked); nothing else is written.");
  cmd->add_option("FILE", options->file, "a sweep file (README.md, 'Sweeps')");
  add_plugin_option(cmd, options->plugins);
  cmd->callback([options]() { run_sweep_command(*options); });
}

}  // namespace rematkit::cli
