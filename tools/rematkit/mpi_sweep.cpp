#include "mpi_sweep.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <iostream>
#include <set>
#include <string>

#include "rematkit/ir/error.hpp"
#include "commands.hpp"
#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/mpi/mpi_session.hpp"
#include "rematkit/mpi/mpi_transport.hpp"
#include "rematkit/sweep/sweep_models.hpp"
#include "rematkit/sweep/budget_answers.hpp"
#include "rematkit/sweep/sweep_output.hpp"

namespace rematkit::cli {
namespace {

// Messages: a worker says it is ready, or sends a finished group's rows as JSON, or the error
// that stopped one; rank 0 answers with a group's index, or -1 when there is nothing left.
constexpr int kReady = 1, kWork = 2, kRows = 3, kFailed = 4;

// Waits for a message without spinning: Open MPI's blocking calls poll at full speed, and a rank
// waiting beside a timed step would take a core from it.
MPI_Status wait_for_message(int source) {
  MPI_Status status;
  for (int arrived = 0;;) {
    MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status);
    if (arrived) return status;
    usleep(1000);
  }
}

std::string receive_text(const MPI_Status& status) {
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::string text(static_cast<size_t>(length), '\0');
  MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return text;
}

void send_text(const std::string& text, int tag) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, tag, MPI_COMM_WORLD);
}

// Each rank's node: the world rank of the lowest rank sharing its memory.
std::vector<int> nodes_of_ranks(int rank, int size) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_id = rank;
  MPI_Bcast(&node_id, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  std::vector<int> nodes(static_cast<size_t>(size));
  MPI_Gather(&node_id, 1, MPI_INT, nodes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  return nodes;
}

void work(const sweep::SweepConfig& config, const PluginRegistry& plugins, sweep::Shard shard) {
  const std::vector<sweep::SweepGroup> groups = sweep::sweep_groups(config);
  sweep::BudgetAnswers answers;  // the budget rows of the groups this rank runs
  MPI_Send(nullptr, 0, MPI_CHAR, 0, kReady, MPI_COMM_WORLD);
  for (;;) {
    wait_for_message(0);
    int group = -1;
    MPI_Recv(&group, 1, MPI_INT, 0, kWork, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (group < 0) return;
    try {
      send_text(sweep::format_json(sweep::run_group(config, plugins, groups[static_cast<size_t>(group)],
                                                    [&](size_t c) { return shard.has(c); }, nullptr, &answers)),
                kRows);
    } catch (const Error& e) {
      send_text(std::string(e.kind() == ErrorKind::kBadInput ? "B" : "I") + e.what(), kFailed);
    }
  }
}

size_t wanted_in(const sweep::SweepConfig& config, const sweep::SweepGroup& group, sweep::Shard shard) {
  size_t wanted = 0;
  for (size_t p = 0; p < config.policies.size(); ++p) wanted += shard.has(group.first_config + p);
  return wanted;
}

void sort_rows(std::vector<sweep::SweepRow>& rows) {
  std::sort(rows.begin(), rows.end(), [](const sweep::SweepRow& a, const sweep::SweepRow& b) { return a.config < b.config; });
}

// Each model's mesh, where it is one of `ranks` devices: its groups run a rank per device.
std::vector<std::optional<Mesh>> meshes_of_ranks(const sweep::SweepConfig& config, int ranks) {
  std::vector<std::optional<Mesh>> meshes;
  for (const sweep::ModelSpec& model : config.models) {
    std::optional<Mesh> mesh = program_mesh(sweep::model_program(model, "everything_saveable").program);
    meshes.push_back(mesh && mesh->num_devices() == ranks ? mesh : std::nullopt);
  }
  return meshes;
}

// The groups whose model is a mesh of as many devices as there are ranks, every rank one device of
// it. A rank that fails says so where the others next compare notes, so every rank stops with its
// error (RanksStopped).
void run_on_every_rank(const mpi::MpiSession& session, const sweep::SweepConfig& config, const PluginRegistry& plugins,
                       sweep::Shard shard, const std::vector<std::optional<Mesh>>& meshes, double rank_timeout,
                       size_t total, const sweep::SweepProgress& progress, const KeepRows& keep,
                       std::vector<sweep::SweepRow>& rows) {
  sweep::BudgetAnswers answers;
  for (const sweep::SweepGroup& group : sweep::sweep_groups(config)) {
    const std::optional<Mesh>& mesh = meshes[group.model];
    if (!mesh || !wanted_in(config, group, shard)) continue;
    if (session.rank() == 0 && progress) progress(rows.size(), total, sweep::group_name(config, group) + ", a rank per device");
    std::vector<sweep::SweepRow> got;
    try {
      mpi::MpiTransport transport(session, *mesh, rank_timeout);
      got = sweep::run_group(config, plugins, group, [&](size_t c) { return shard.has(c); }, nullptr, &answers, &transport);
    } catch (const mpi::RanksStopped&) {
      throw;
    } catch (const Error& e) {
      session.stopped(e, rank_timeout);
    }
    if (session.rank() != 0) continue;
    for (sweep::SweepRow& row : got) rows.push_back(std::move(row));
    sort_rows(rows);
    if (keep) keep(rows);
  }
}

std::vector<sweep::SweepRow> coordinate(const sweep::SweepConfig& config, sweep::Shard shard, int size,
                                        const std::vector<int>& node_of, const std::vector<std::optional<Mesh>>& meshes,
                                        size_t total, const sweep::SweepProgress& progress, const KeepRows& keep,
                                        std::vector<sweep::SweepRow> rows) {
  const std::vector<sweep::SweepGroup> groups = sweep::sweep_groups(config);
  std::deque<int> pending;
  for (size_t g = 0; g < groups.size(); ++g)
    if (!meshes[groups[g].model] && wanted_in(config, groups[g], shard)) pending.push_back(static_cast<int>(g));
  std::set<int> busy_nodes;
  std::vector<int> waiting;  // ranks ready for work, in the order they asked
  std::string failure;
  for (int released = 0; released < size - 1;) {
    const MPI_Status status = wait_for_message(MPI_ANY_SOURCE);
    const int from = status.MPI_SOURCE;
    const std::string text = receive_text(status);
    if (status.MPI_TAG == kRows) {
      for (sweep::SweepRow& row : sweep::parse_json_rows(text, "rank " + std::to_string(from))) rows.push_back(std::move(row));
      sort_rows(rows);
      if (keep) keep(rows);
    } else if (status.MPI_TAG == kFailed && failure.empty()) {
      failure = text;
    }
    if (status.MPI_TAG != kReady) busy_nodes.erase(node_of[static_cast<size_t>(from)]);
    waiting.push_back(from);
    // Hand out what can start now: one group per node at a time; -1 once nothing is left to start.
    for (auto it = waiting.begin(); it != waiting.end();) {
      const int node = node_of[static_cast<size_t>(*it)];
      int group = -1;
      if (failure.empty() && !pending.empty()) {
        if (busy_nodes.count(node)) {
          ++it;
          continue;
        }
        group = pending.front();
        pending.pop_front();
        busy_nodes.insert(node);
        if (progress)
          progress(rows.size(), total,
                   sweep::group_name(config, groups[static_cast<size_t>(group)]) + ", rank " + std::to_string(*it));
      } else {
        ++released;
      }
      MPI_Send(&group, 1, MPI_INT, *it, kWork, MPI_COMM_WORLD);
      it = waiting.erase(it);
    }
  }
  if (!failure.empty())
    throw Error(failure[0] == 'B' ? ErrorKind::kBadInput : ErrorKind::kInternal, failure.substr(1));
  return rows;
}

}  // namespace

std::optional<std::vector<sweep::SweepRow>> run_sweep_over_mpi(const sweep::SweepConfig& config,
                                                               const PluginRegistry& plugins, sweep::Shard shard,
                                                               const sweep::SweepProgress& progress, const KeepRows& keep,
                                                               double rank_timeout) {
  const mpi::MpiSession session;
  const int rank = session.rank(), size = session.size();
  const std::vector<int> node_of = nodes_of_ranks(rank, size);
  const std::vector<std::optional<Mesh>> meshes = meshes_of_ranks(config, size);
  size_t total = 0;
  for (const sweep::SweepGroup& group : sweep::sweep_groups(config)) total += wanted_in(config, group, shard);
  std::vector<sweep::SweepRow> rows;
  try {
    run_on_every_rank(session, config, plugins, shard, meshes, rank_timeout, total, progress, keep, rows);
  } catch (const mpi::RanksStopped& e) {
    // Every rank has the error; rank 0 alone says it, and the others wait until it has (mpirun ends
    // the job when the first rank exits non-zero).
    if (rank == 0) std::cerr << "rematkit: " << e.what() << std::endl;
    session.barrier(rank_timeout);
    throw ExitCode{e.kind() == ErrorKind::kBadInput ? 2 : 1};
  }
  if (rank != 0) {
    work(config, plugins, shard);
    return std::nullopt;
  }
  return coordinate(config, shard, size, node_of, meshes, total, progress, keep, std::move(rows));
}

void wait_for_every_rank() {
  const mpi::MpiSession session;
  session.barrier(60);
}

}  // namespace rematkit::cli
