// Running a sweep: every (model, policy, backend list, threads) configuration is planned once,
// run once to warm up, then timed `repetitions` times, one configuration at a time.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rematkit/arena_layout.hpp"
#include "rematkit/memory_report.hpp"
#include "rematkit/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"

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
  // Where the device peak comes from (rematkit/memory_report.hpp): the pass of the peak step
  // ("forward", "recompute", "backward") and the bytes alive there per buffer kind.
  std::string peak_pass;
  std::array<int64_t, kNumBufferKinds> peak_bytes{};
  int64_t forward_flops = 0, recompute_flops = 0, backward_flops = 0;
  // Largest |difference| of any gradient element from everything_saveable's on the same backend
  // and threads: 0 when remat changes nothing, as it must. Both the policy's gradient from the run
  // of its group's policies all at once and its timed step's first gradient are compared.
  double max_grad_diff = 0;
  // The planned step's memory report, for timelines (not written to CSV or JSON; null in merged rows).
  std::shared_ptr<const MemoryReport> memory;
};

// Called before each configuration runs: how many ran, of how many, and which is next.
using SweepProgress = std::function<void(size_t done, size_t total, const SweepRow& next)>;

// A deterministic part of the grid for a cluster's job array: shard `index` of `count` (1-based)
// runs the configurations whose position p has p % count == index - 1.
struct Shard {
  size_t index = 1, count = 1;
};
// A bad-input Error for "I/N" text that is not a shard (1 <= I <= N).
Shard parse_shard(const std::string& text);

// The grid order: models, then backend lists, then thread counts, then policies.
std::vector<SweepRow> run_sweep(const SweepConfig& config, const PluginRegistry& plugins,
                                const SweepProgress& progress = nullptr, Shard shard = {});

}  // namespace rematkit::sweep
