#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#ifdef REMATKIT_HAVE_MPI
#include "mpi_sweep.hpp"
#endif
#include "rematkit/io/text_file.hpp"
#include "rematkit/sweep/sweep_chart.hpp"
#include "rematkit/sweep/sweep_checks.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_output.hpp"
#include "rematkit/sweep/sweep_report.hpp"
#include "rematkit/sweep/sweep_runner.hpp"

namespace rematkit::cli {
namespace {

struct SweepOptions {
  PluginOptions plugins;
  std::string file;
  std::string shard = "1/1";
  std::string csv, json, charts, report;  // override the file's outputs
  bool wide = false;
  std::string max_memory;  // overrides the file's max_memory
  double rank_timeout = 60;  // under mpirun
};

struct MergeOptions {
  std::vector<std::string> shards;
  std::string csv, json, charts, report;
  bool wide = false;
};

// Where the rows go, and how the table is printed.
struct OutputPaths {
  std::string csv, json, charts, report;
  bool wide = false;
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

// "2026-12-01 14:03" in local time, for the report's title.
std::string now_text() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", std::localtime(&now));
  return text;
}

// The rows as CSV and JSON, where asked for.
void write_rows(const std::vector<sweep::SweepRow>& rows, const OutputPaths& to) {
  if (!to.csv.empty()) write_text_file(to.csv, sweep::format_csv(rows), "sweep output");
  if (!to.json.empty()) write_text_file(to.json, sweep::format_json(rows), "sweep output");
}

// The table on stdout; CSV, JSON, a chart per model and the report where asked for, and nowhere
// else. `notes` go on the report's page.
void write_outputs(const std::vector<sweep::SweepRow>& rows, const OutputPaths& to, const std::string& source,
                   const std::vector<std::string>& notes) {
  std::cout << (to.wide ? sweep::format_wide_table(rows) : sweep::format_table(rows)) << std::flush;
  write_rows(rows, to);
  std::error_code ignored;  // write_text_file names the file if the folder still cannot be written
  if (!to.charts.empty()) {
    std::filesystem::create_directories(to.charts, ignored);
    std::vector<std::string> models;
    for (const sweep::SweepRow& row : rows)
      if (std::find(models.begin(), models.end(), row.model) == models.end()) models.push_back(row.model);
    for (const std::string& model : models)
      write_text_file((std::filesystem::path(to.charts) / sweep::chart_file_name(model)).string(),
                      sweep::format_svg(rows, model), "sweep chart");
  }
  if (!to.report.empty()) {
    std::filesystem::create_directories(to.report, ignored);
    write_text_file((std::filesystem::path(to.report) / "index.html").string(),
                    sweep::format_report_html(rows, {source, now_text(), notes}), "sweep report");
  }
}

// A command-line path wins over the file's, and each is checked before the run.
OutputPaths checked_outputs(const SweepOptions& o, const sweep::SweepConfig& config) {
  auto pick = [](const std::string& flag, const char* option, const std::string& file_path, const SourceLocation& file_where) {
    return flag.empty() ? std::make_pair(file_path, file_where) : std::make_pair(flag, SourceLocation{option, 0, 0});
  };
  const auto csv = pick(o.csv, "--csv", config.csv, config.csv_where);
  const auto json = pick(o.json, "--json", config.json, config.json_where);
  const auto charts = pick(o.charts, "--charts", config.charts, config.charts_where);
  const auto report = pick(o.report, "--report", config.report, config.report_where);
  if (!csv.first.empty()) sweep::check_output_file(csv.first, csv.second, "sweep output");
  if (!json.first.empty()) sweep::check_output_file(json.first, json.second, "sweep output");
  if (!charts.first.empty()) sweep::check_output_folder(charts.first, charts.second, "sweep charts");
  if (!report.first.empty()) sweep::check_output_folder(report.first, report.second, "sweep report");
  return {csv.first, json.first, charts.first, report.first, o.wide};
}

void run_sweep_command(const SweepOptions& o) {
  const std::optional<int> rank = launched_rank();
  sweep::SweepConfig config;
  PluginRegistry plugins;
  OutputPaths outputs;
  sweep::Shard shard;
  try {
    shard = sweep::parse_shard(o.shard);
    config = o.file.empty() ? sweep::parse_sweep(sweep::default_sweep_yaml(), "<default sweep>") : sweep::load_sweep(o.file);
    if (!o.max_memory.empty()) config.max_memory = memory_limit(o.max_memory);
    // The sweep's own plugins first, then --plugin and the default folders; then every name the
    // sweep uses and every output path, before anything runs.
    sweep::load_sweep_plugins(config, plugins);
    plugins.discover(o.plugins.files);
    sweep::check_sweep(config, plugins);
    outputs = checked_outputs(o, config);
  } catch (const Error& e) {
    if (!rank) throw;
    // Every rank finds it; rank 0 alone says it, and every rank waits until it has: mpirun stops
    // the job when the first rank exits non-zero, which could cut rank 0 off before it speaks.
    if (*rank == 0) std::cerr << "rematkit: " << e.what() << std::endl;
#ifdef REMATKIT_HAVE_MPI
    wait_for_every_rank();
#endif
    throw ExitCode{e.kind() == ErrorKind::kBadInput ? 2 : 1};
  }

  if (rank) {
#ifdef REMATKIT_HAVE_MPI
    // The CSV and JSON rewritten after each group, its rows marked partial until the last: a job
    // whose rank dies keeps what finished.
    const KeepRows keep = [&](std::vector<sweep::SweepRow> so_far) {
      for (sweep::SweepRow& row : so_far) row.partial = true;
      write_rows(so_far, outputs);
    };
    const std::optional<std::vector<sweep::SweepRow>> rows =
        run_sweep_over_mpi(config, plugins, shard, report_progress, keep, o.rank_timeout);
    if (rows) write_outputs(*rows, outputs, config.source, {});
    return;
#else
    if (*rank == 0) fail("this rematkit was built without MPI, so its ranks would all run the whole sweep: install libopenmpi-dev and rebuild");
    throw ExitCode{2};
#endif
  }

  sweep::SweepRunOptions run;
  run.progress = report_progress;
  run.shard = shard;
  run.stop = &interrupted;
  std::signal(SIGINT, on_interrupt);
  sweep::SweepResult result = sweep::run_sweep(config, plugins, run);
  std::signal(SIGINT, SIG_DFL);
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
  std::vector<std::string> notes;
  if (result.interrupted) {
    for (sweep::SweepRow& row : result.rows) row.partial = true;
    notes.push_back("Partial: interrupted with " + std::to_string(result.rows.size()) + " of " +
                    std::to_string(sweep::grid_size(config)) + " configurations finished.");
  }
  write_outputs(result.rows, outputs, config.source, notes);
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
  for (const std::string* path : {&o.csv, &o.json})
    if (!path->empty()) sweep::check_output_file(*path, SourceLocation{path == &o.csv ? "--csv" : "--json", 0, 0}, "sweep output");
  write_outputs(sweep::merge_shards(shards), {o.csv, o.json, o.charts, o.report, o.wide}, "merged shards", {});
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "time and measure models x policies x backends x threads");
  cmd->footer(
      "Runs every configuration of a YAML sweep file (without FILE, the default sweep built in from\n"
      "sweep/default_sweep.yaml). Every policy, backend, plugin, program and output path is checked first.\n"
      "Each configuration is planned and warmed up once; a model's policies on one backend list and thread\n"
      "count are timed together, `repetitions` rounds in a shuffled order (or `repetitions: auto`: until each\n"
      "median's 95% interval is within target_interval, or time_limit). Prints, per model, backend list and\n"
      "threads, each policy's time against everything_saveable with its interval and verdict (faster, slower,\n"
      "~ = no clear difference), peak MiB, residual MiB, recompute GFLOP and the Pareto set (--wide: every\n"
      "column). `outputs: {csv: PATH, json: PATH, charts: DIR, report: DIR}` writes the rows (every column),\n"
      "DIR/MODEL.svg per model and DIR/index.html, one self-contained page; nothing else is written, and\n"
      "each file appears whole or not at all. Ctrl-C keeps the groups that finished (partial) and exits 130.");
  cmd->add_option("FILE", options->file, "a sweep file (docs/sweeps.md)");
  cmd->add_option("--shard", options->shard,
                  "I/N: run only configurations I, I+N, I+2N, ... of the grid (1-based; join with sweep-merge)");
  cmd->add_option("--csv", options->csv, "write the rows as CSV here (instead of the file's outputs.csv)");
  cmd->add_option("--json", options->json, "write the rows as JSON here (instead of the file's outputs.json)");
  cmd->add_option("--charts", options->charts, "write DIR/MODEL.svg per model (instead of the file's outputs.charts)");
  cmd->add_option("--report", options->report, "write DIR/index.html, the sweep as one page (instead of outputs.report)");
  cmd->add_flag("--wide", options->wide, "print every column, one line per configuration");
  add_memory_limit_option(cmd, options->max_memory);
  add_rank_timeout_option(cmd, options->rank_timeout);
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
  cmd->add_option("--report", options->report, "write DIR/index.html, the joined sweep as one page");
  cmd->add_flag("--wide", options->wide, "print every column, one line per configuration");
  cmd->callback([options]() { run_merge_command(*options); });
}

}  // namespace rematkit::cli
