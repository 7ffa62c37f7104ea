#include "mpi_sweep.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <set>
#include <string>

#include "rematkit/ir/error.hpp"
#include "rematkit/mpi/mpi_session.hpp"
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

std::vector<sweep::SweepRow> coordinate(const sweep::SweepConfig& config, sweep::Shard shard, int size,
                                        const std::vector<int>& node_of, const sweep::SweepProgress& progress) {
  const std::vector<sweep::SweepGroup> groups = sweep::sweep_groups(config);
  std::deque<int> pending;
  size_t total = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    size_t wanted = 0;
    for (size_t p = 0; p < config.policies.size(); ++p) wanted += shard.has(groups[g].first_config + p);
    if (wanted) pending.push_back(static_cast<int>(g));
    total += wanted;
  }
  std::vector<sweep::SweepRow> rows;
  std::set<int> busy_nodes;
  std::vector<int> waiting;  // ranks ready for work, in the order they asked
  std::string failure;
  for (int released = 0; released < size - 1;) {
    const MPI_Status status = wait_for_message(MPI_ANY_SOURCE);
    const int from = status.MPI_SOURCE;
    const std::string text = receive_text(status);
    if (status.MPI_TAG == kRows) {
      for (sweep::SweepRow& row : sweep::parse_json_rows(text, "rank " + std::to_string(from))) rows.push_back(std::move(row));
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
  std::sort(rows.begin(), rows.end(), [](const sweep::SweepRow& a, const sweep::SweepRow& b) { return a.config < b.config; });
  return rows;
}

}  // namespace

std::optional<std::vector<sweep::SweepRow>> run_sweep_over_mpi(const sweep::SweepConfig& config,
                                                               const PluginRegistry& plugins, sweep::Shard shard,
                                                               const sweep::SweepProgress& progress) {
  const mpi::MpiSession session;
  const int rank = session.rank(), size = session.size();
  const std::vector<int> node_of = nodes_of_ranks(rank, size);
  if (rank != 0) {
    work(config, plugins, shard);
    return std::nullopt;
  }
  return coordinate(config, shard, size, node_of, progress);
}

void wait_for_every_rank() {
  const mpi::MpiSession session;
  session.barrier(60);
}

}  // namespace rematkit::cli
