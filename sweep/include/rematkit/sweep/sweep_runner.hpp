// Running a sweep: every (model, policy, backend list, threads) configuration is planned once and
// run once to warm up. A model's policies on one backend list and thread count (a group) are then
// timed together, one step at a time in a shuffled order each round, so that a slow spell of a
// shared machine lands on every policy alike.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rematkit/schedule/arena_layout.hpp"
#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/export.hpp"

namespace rematkit {
class MeshTransport;
}

namespace rematkit::sweep {

struct SweepRow {
  // The configuration's position in the sweep's grid, from 1 as `--shard I/N` counts (shard I runs
  // configurations I, I+N, ...), and how many the whole grid has (sweep-merge finds gaps with it).
  size_t config = 1, grid_size = 1;
  std::string model, policy, backend;  // backend: the preference list, "highway,reference"
  int threads = 1;
  double median_ms = 0, min_ms = 0, max_ms = 0;  // one gradient step: forward and backward
  // A 95% confidence interval on the median step time, and every timed sample (in the order run).
  double median_low_ms = 0, median_high_ms = 0;
  std::vector<double> samples_ms;
  // Against the baseline on the same model, backend list and threads (everything_saveable, or the
  // first policy when the sweep does not list it): "faster", "slower", or "no clear difference"
  // when the two intervals overlap; empty for the baseline itself.
  std::string versus_baseline;
  // Other processes' share of the machine's CPU time while this row was timed (0 to 1).
  double machine_load = 0;
  std::array<int64_t, kNumMemorySpaces> predicted_peak{}, measured_peak{};  // bytes per memory space
  int64_t residual_bytes = 0;
  // Where the device peak comes from (rematkit/analysis/memory_report.hpp): the pass of the peak step
  // ("forward", "recompute", "backward") and the bytes alive there per buffer kind.
  std::string peak_pass;
  std::array<int64_t, kNumBufferKinds> peak_bytes{};
  int64_t forward_flops = 0, recompute_flops = 0, backward_flops = 0;
  // A model on a mesh (parallel:): the bytes one device sends in collectives per pass (the
  // recompute's are re-communicated: analysis/communication.hpp); the peaks and residuals are one
  // device's. 0 on one device.
  int64_t forward_comm_bytes = 0, recompute_comm_bytes = 0, backward_comm_bytes = 0;
  // Largest |difference| of any gradient element from the baseline's (everything_saveable, or the
  // first policy) on the same backend list and threads: 0 when remat changes nothing, as it must.
  // The steps' warm-up gradients are compared, then their gradients from running all at once.
  double max_grad_diff = 0;
  // The process's peak resident memory while its group was planned and run (PeakRss): every
  // policy of the group at once, and the inputs they share. 0 where it could not be read.
  int64_t process_peak_rss = 0;
  // Its group's steps did not fit the memory limit together, so each was planned, checked and timed
  // alone, one after another (process_peak_rss then is this step's, with the group's inputs).
  bool timed_alone = false;
  // Why this configuration did not run (its predicted peak over the memory limit, say); empty when
  // it ran. A row that did not run has no times, and only what was known before it would allocate.
  std::string failure;
  // The sweep that wrote this row was interrupted before every configuration it was to run had run.
  bool partial = false;
  // The planned step's memory report, for timelines (not written to CSV or JSON; null in merged rows).
  std::shared_ptr<const MemoryReport> memory;
};

// Called as each group starts: rows finished so far, rows in all, and what runs next.
using SweepProgress = std::function<void(size_t done, size_t total, const std::string& next)>;

// A deterministic part of the grid for a cluster's job array: shard `index` of `count` (both from
// 1, as configurations count) runs configurations index, index + count, index + 2 count, ...
struct Shard {
  size_t index = 1, count = 1;
  bool has(size_t config) const { return (config - 1) % count == index - 1; }
};
// A bad-input Error for "I/N" text that is not a shard (1 <= I <= N).
REMATKIT_SWEEP_EXPORT Shard parse_shard(const std::string& text);

// One model on one backend list and thread count: its policies are configurations first_config,
// first_config + 1, ..., in the sweep's policy order, and are timed together.
struct SweepGroup {
  size_t model = 0, backends = 0, threads = 0;  // positions in the config's lists
  size_t first_config = 1;
};
// Every group, in grid order: models, then backend lists, then thread counts (then policies).
REMATKIT_SWEEP_EXPORT std::vector<SweepGroup> sweep_groups(const SweepConfig& config);
// "mlp on highway,reference, 2 thread(s)": a group as progress reports name it.
REMATKIT_SWEEP_EXPORT std::string group_name(const SweepConfig& config, const SweepGroup& group);
REMATKIT_SWEEP_EXPORT size_t grid_size(const SweepConfig& config);

class BudgetAnswers;

// Runs the configurations of `group` that `wanted` accepts, with the group's baseline (for the
// verdicts) whether wanted or not. Returns their rows, in policy order; none if `stop` was set
// before they finished. Budget rows take their answers from `answers` (budget_answers.hpp), shared
// by the groups of a sweep; a group's own when null.
//
// `device`: this process runs one device of the model's mesh (a rank of mpirun), every other
// device calling run_group with its own, in step: the steps are that device's alone, their
// collectives through `device`; the memory limit is the least of any device's, and the rows' peaks
// and gradient differences the most of any device's. Null: every device of a mesh in this process.
REMATKIT_SWEEP_EXPORT std::vector<SweepRow> run_group(const SweepConfig& config, const PluginRegistry& plugins, const SweepGroup& group,
                                const std::function<bool(size_t config)>& wanted,
                                const std::atomic<bool>* stop = nullptr, BudgetAnswers* answers = nullptr,
                                MeshTransport* device = nullptr);

struct SweepRunOptions {
  SweepProgress progress;
  Shard shard;
  // Looked at between timed steps: once set (from a SIGINT handler, say), the run stops and
  // keeps the rows of the groups that finished.
  const std::atomic<bool>* stop = nullptr;
};

struct SweepResult {
  std::vector<SweepRow> rows;  // grid order
  bool interrupted = false;    // `stop` came before every wanted configuration had run
};

REMATKIT_SWEEP_EXPORT SweepResult run_sweep(const SweepConfig& config, const PluginRegistry& plugins, const SweepRunOptions& options = {});

}  // namespace rematkit::sweep
