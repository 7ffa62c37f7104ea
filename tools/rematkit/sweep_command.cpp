#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "rematkit/io/text_file.hpp"
#include "rematkit/sweep/sweep_chart.hpp"
#include "rematkit/sweep/sweep_checks.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_output.hpp"
#include "rematkit/sweep/sweep_runner.hpp"

namespace rematkit::cli {
namespace {

struct SweepOptions {
  PluginOptions plugins;
  std::string file;
  std::string shard = "1/1";
  std::string csv, json, charts;  // override the file's outputs
};

struct MergeOptions {
  std::vector<std::string> shards;
  std::string csv, json, charts;
};

// Set by SIGINT: the sweep stops between timed steps and keeps the groups that finished.
std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) {
  interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// A bar redrawn in place on a terminal; one line per group otherwise (logs, CI).
void report_progress(size_t done, size_t total, const std::string& what) {
  if (isatty(STDERR_FILENO)) {
    const size_t filled = total ? 30 * done / total : 30;
    std::fprintf(stderr, "\r\033[K[%s%s] %zu/%zu rows, timing %s", std::string(filled, '#').c_str(),
                 std::string(30 - filled, '.').c_str(), done, total, what.c_str());
  } else {
    std::fprintf(stderr, "rematkit sweep: [%zu/%zu rows done] %s\n", done, total, what.c_str());
  }
}

// The table on stdout; CSV, JSON and a chart per model where asked for, and nowhere else.
void write_outputs(const std::vector<sweep::SweepRow>& rows, const std::string& csv, const std::string& json,
                   const std::string& charts) {
  std::cout << sweep::format_table(rows) << std::flush;
  if (!csv.empty()) write_text_file(csv, sweep::format_csv(rows), "sweep output");
  if (!json.empty()) write_text_file(json, sweep::format_json(rows), "sweep output");
  if (charts.empty()) return;
  std::error_code ignored;  // write_text_file names the file if the folder still cannot be written
  std::filesystem::create_directories(charts, ignored);
  std::vector<std::string> models;
  for (const sweep::SweepRow& row : rows)
    if (std::find(models.begin(), models.end(), row.model) == models.end()) models.push_back(row.model);
  for (const std::string& model : models)
    write_text_file((std::filesystem::path(charts) / sweep::chart_file_name(model)).string(), sweep::format_svg(rows, model),
                    "sweep chart");
}

// Where the rows go: a command-line path wins over the file's, and each is checked before the run.
struct OutputPaths {
  std::string csv, json, charts;
};

OutputPaths checked_outputs(const SweepOptions& o, const sweep::SweepConfig& config) {
  auto pick = [](const std::string& flag, const char* option, const std::string& file_path, const SourceLocation& file_where) {
    return flag.empty() ? std::make_pair(file_path, file_where) : std::make_pair(flag, SourceLocation{option, 0, 0});
  };
  const auto csv = pick(o.csv, "--csv", config.csv, config.csv_where);
  const auto json = pick(o.json, "--json", config.json, config.json_where);
  const auto charts = pick(o.charts, "--charts", config.charts, config.charts_where);
  if (!csv.first.empty()) sweep::check_output_file(csv.first, csv.second, "sweep output");
  if (!json.first.empty()) sweep::check_output_file(json.first, json.second, "sweep output");
  if (!charts.first.empty()) sweep::check_output_folder(charts.first, charts.second, "sweep charts");
  return {csv.first, json.first, charts.first};
}

void run_sweep_command(const SweepOptions& o) {
  const sweep::Shard shard = sweep::parse_shard(o.shard);
  const sweep::SweepConfig config =
      o.file.empty() ? sweep::parse_sweep(sweep::default_sweep_yaml(), "<default sweep>") : sweep::load_sweep(o.file);
  // The sweep's own plugins first, then --plugin and the default folders; then every name the
  // sweep uses and every output path, before anything runs.
  PluginRegistry plugins;
  sweep::load_sweep_plugins(config, plugins);
  plugins.discover(o.plugins.files);
  sweep::check_sweep(config, plugins);
  const OutputPaths outputs = checked_outputs(o, config);

  sweep::SweepRunOptions run;
  run.progress = report_progress;
  run.shard = shard;
  run.stop = &interrupted;
  std::signal(SIGINT, on_interrupt);
  const sweep::SweepResult result = sweep::run_sweep(config, plugins, run);
  std::signal(SIGINT, SIG_DFL);
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
  write_outputs(result.rows, outputs.csv, outputs.json, outputs.charts);
  if (result.interrupted) {
    std::fprintf(stderr, "rematkit sweep: interrupted: kept the %zu rows of the groups that finished (partial)\n",
                 result.rows.size());
    throw ExitCode{130};
  }
}

void run_merge_command(const MergeOptions& o) {
  std::vector<std::pair<std::string, std::vector<sweep::SweepRow>>> shards;
  for (const std::string& path : o.shards) {
    shards.emplace_back(path, sweep::parse_json_rows(read_text_file(path, "shard's JSON file"), path));
  }
  write_outputs(sweep::merge_shards(shards), o.csv, o.json, o.charts);
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
  cmd->add_option("--shard", options->shard,
                  "I/N: run only configurations I, I+N, I+2N, ... of the grid (1-based; join with sweep-merge)");
  cmd->add_option("--csv", options->csv, "write the rows as CSV here (instead of the file's outputs.csv)");
  cmd->add_option("--json", options->json, "write the rows as JSON here (instead of the file's outputs.json)");
  cmd->add_option("--charts", options->charts, "write DIR/MODEL.svg per model (instead of the file's outputs.charts)");
  add_plugin_option(cmd, options->plugins);
  cmd->callback([options]() { run_sweep_command(*options); });
}

void add_sweep_merge_command(CLI::App& app) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* cmd = app.add_subcommand("sweep-merge", "join the JSON outputs of a sweep's shards");
  cmd->footer(
      "Reads the JSON files that `rematkit sweep FILE --shard I/N` wrote (outputs: {json: ...}) for every I, and\n"
      "prints the whole sweep's table in grid order. A configuration in two files, or one no file has, is an\n"
      "error. --csv, --json and --charts write the joined rows as a sweep's outputs would.");
  cmd->add_option("SHARDS", options->shards, "the shards' JSON files")->required();
  cmd->add_option("--csv", options->csv, "write the joined rows as CSV");
  cmd->add_option("--json", options->json, "write the joined rows as JSON");
  cmd->add_option("--charts", options->charts, "write DIR/MODEL.svg per model");
  cmd->callback([options]() { run_merge_command(*options); });
}

}  // namespace rematkit::cli
