// rematkit::sweep, for applications: time a model under several checkpoint policies, backend lists
// and thread counts, as `rematkit sweep` does, and get each configuration's median step time with
// its 95% interval, its verdict against everything_saveable, its memory and its FLOPs.
//
//   rematkit::sweep::SweepConfig config = rematkit::sweep::load_sweep("my_sweep.yaml");  // or build it
//   rematkit::sweep::check_sweep(config, rematkit::default_plugins());   // names, before any run
//   for (const rematkit::sweep::SweepRow& row : rematkit::sweep::run_sweep(config, rematkit::default_plugins()).rows)
//     std::printf("%s: %.3f ms [%.3f, %.3f]\n", row.policy.c_str(), row.median_ms, row.median_low_ms, row.median_high_ms);
//
// Link rematkit::sweep (find_package(rematkit COMPONENTS sweep), or pkg-config rematkit-sweep).
#pragma once

#include "rematkit/sweep/median_interval.hpp"  // median_interval, versus
#include "rematkit/sweep/sweep_checks.hpp"     // check_sweep, load_sweep_plugins, output checks
#include "rematkit/sweep/sweep_config.hpp"     // SweepConfig, parse_sweep, load_sweep
#include "rematkit/sweep/sweep_output.hpp"     // format_table, format_csv, format_json
#include "rematkit/sweep/sweep_runner.hpp"     // SweepRow, run_sweep, run_group
