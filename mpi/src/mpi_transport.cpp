#include "rematkit/mpi/mpi_transport.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <map>

#include "rematkit/ir/error.hpp"
#include "request_wait.hpp"

namespace rematkit::mpi {
namespace {

int count_of(size_t bytes, const std::string& what) {
  if (bytes > static_cast<size_t>(INT_MAX))
    fail(what + " moves " + std::to_string(bytes) + " bytes in one exchange, past MPI's count of 2 GiB");
  return static_cast<int>(bytes);
}

}  // namespace

// A communicator per group of devices, made the first time a collective runs over it.
struct MpiTransport::Groups {
  std::map<std::vector<int64_t>, MPI_Comm> comms;

  // Called when every rank is at the same collective (after agree()), each with its own group:
  // ranks ordered by their place in it.
  MPI_Comm of(const std::vector<int64_t>& group, int64_t device) {
    auto [at, made] = comms.try_emplace(group, MPI_COMM_NULL);
    if (made) {
      const auto position = std::find(group.begin(), group.end(), device) - group.begin();
      MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(*std::min_element(group.begin(), group.end())),
                     static_cast<int>(position), &at->second);
    }
    return at->second;
  }

  // MPI_Iallgather or MPI_Ialltoall over `group`'s communicator: `count` bytes given per member,
  // as many received from each.
  using Exchange = int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm, MPI_Request*);
  void exchange(Exchange start, const std::vector<int64_t>& group, int64_t device, const void* given, int count,
                void* received, const std::string& what, double timeout) {
    MPI_Request request;
    start(given, count, MPI_BYTE, received, count, MPI_BYTE, of(group, device), &request);
    wait_or_abort(&request, 1, what, static_cast<int>(device), timeout);
  }

  ~Groups() {
    for (auto& [group, comm] : comms) MPI_Comm_free(&comm);
  }
};

MpiTransport::MpiTransport(const MpiSession& session, const Mesh& mesh, double timeout_seconds)
    : session_(session), mesh_(mesh), device_(session.rank()), timeout_seconds_(timeout_seconds),
      groups_(std::make_unique<Groups>()) {
  if (session.size() != mesh.num_devices())
    fail("the mesh " + mesh.str() + " has " + std::to_string(mesh.num_devices()) + " devices but mpirun started " +
         std::to_string(session.size()) + " ranks: run one rank per device (mpirun -n " +
         std::to_string(mesh.num_devices()) + ")");
}

MpiTransport::~MpiTransport() = default;

void MpiTransport::agree(const std::string& what, size_t bytes) { session_.agree(what, bytes, timeout_seconds_); }

namespace {

// Adds an exchange's bytes and wall time to `traffic` when it goes out of scope.
class Timed {
 public:
  Timed(MpiTransport::Traffic& traffic, size_t bytes_sent)
      : traffic_(traffic), bytes_(bytes_sent), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    traffic_.bytes_sent += static_cast<int64_t>(bytes_);
    traffic_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  MpiTransport::Traffic& traffic_;
  size_t bytes_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

void MpiTransport::all_gather(const std::string& what, const std::vector<int64_t>& group, const void* given,
                              size_t bytes, void* received) {
  const Timed timed(traffic_, bytes * (group.size() - 1));
  agree(what, bytes);
  groups_->exchange(MPI_Iallgather, group, device_, given, count_of(bytes, what), received, what, timeout_seconds_);
}

void MpiTransport::all_to_all(const std::string& what, const std::vector<int64_t>& group, const void* given,
                              size_t chunk, void* received) {
  const Timed timed(traffic_, chunk * (group.size() - 1));
  agree(what, chunk);
  groups_->exchange(MPI_Ialltoall, group, device_, given, count_of(chunk, what), received, what, timeout_seconds_);
}

void MpiTransport::permute(const std::string& what, int64_t to, const void* given, int64_t from, void* received,
                           size_t bytes) {
  const Timed timed(traffic_, to < 0 ? 0 : bytes);
  agree(what, bytes);
  const int count = count_of(bytes, what);
  constexpr int kTag = 43;
  MPI_Request requests[2];
  MPI_Irecv(received, count, MPI_BYTE, from < 0 ? MPI_PROC_NULL : static_cast<int>(from), kTag, MPI_COMM_WORLD, &requests[0]);
  MPI_Isend(given, count, MPI_BYTE, to < 0 ? MPI_PROC_NULL : static_cast<int>(to), kTag, MPI_COMM_WORLD, &requests[1]);
  wait_or_abort(requests, 2, what, static_cast<int>(device_), timeout_seconds_);
}

}  // namespace rematkit::mpi
