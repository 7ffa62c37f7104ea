// `mpirun -n N rematkit sweep FILE`: the sweep's groups (a model on one backend list and thread
// count, its policies timed together) spread over the ranks. Rank 0 hands them out and gathers the
// rows; by default each node times one group at a time, so timings do not compete for its cores.
#pragma once
#include <optional>
#include <vector>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_runner.hpp"

namespace rematkit::cli {

// Runs `config`'s groups of `shard` over the ranks. On rank 0: every row, in grid order (`progress`
// is called as groups are handed out). On the other ranks: nullopt, and nothing is to be written.
// A group that fails fails the sweep: rank 0 rethrows its error once every rank has stopped.
std::optional<std::vector<sweep::SweepRow>> run_sweep_over_mpi(const sweep::SweepConfig& config,
                                                               const PluginRegistry& plugins, sweep::Shard shard,
                                                               const sweep::SweepProgress& progress);

// Returns once every rank has called it (MPI initialized and finalized around a barrier).
void wait_for_every_rank();

}  // namespace rematkit::cli
