// `mpirun -n N rematkit sweep FILE`. A group whose model is a mesh of N devices (a gpt or llama
// with parallel:, a program with a shard_map) runs on every rank at once, a rank per device, its
// collectives over MPI; rank 0 keeps the rows. The other groups (a model on one backend list and
// thread count, its policies timed together) spread over the ranks: rank 0 hands them out and
// gathers the rows; by default each node times one group at a time, so timings do not compete for
// its cores.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_runner.hpp"

namespace rematkit::cli {

// Rows so far, in grid order, for rank 0 to put on disk after each group: a job that dies keeps them.
using KeepRows = std::function<void(const std::vector<sweep::SweepRow>& rows)>;

// Runs `config`'s groups of `shard` over the ranks. On rank 0: every row, in grid order (`progress`
// is called as groups start, `keep` as they finish). On the other ranks: nullopt, and nothing is to
// be written. A group that fails fails the sweep, on every rank with the same error. A rank that
// waits past `rank_timeout` seconds at a collective ends the job.
std::optional<std::vector<sweep::SweepRow>> run_sweep_over_mpi(const sweep::SweepConfig& config,
                                                               const PluginRegistry& plugins, sweep::Shard shard,
                                                               const sweep::SweepProgress& progress, const KeepRows& keep,
                                                               double rank_timeout);

// Returns once every rank has called it (MPI initialized and finalized around a barrier).
void wait_for_every_rank();

}  // namespace rematkit::cli
