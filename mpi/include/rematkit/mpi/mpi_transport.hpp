// A mesh whose devices are MPI ranks: rank r of MPI_COMM_WORLD is device r. A collective over
// some axes runs on the communicator of the ranks that share the other axes' coordinates
// (MPI_Comm_split, made once per group): all_gather through MPI_Iallgather, all_to_all through
// MPI_Ialltoall, permute through MPI_Isend/MPI_Irecv pairs. psum is the core's reduce-scatter and
// all-gather over these (device_collective.hpp), its sum in the group's order: the same bits on
// every run and as the simulated mesh's.
//
// Before each exchange the ranks compare what they are about to run (MpiSession::agree): ranks
// that disagree, or a rank that stopped on an error, stop every rank with the same error. A wait
// past the timeout (a rank that died, or hangs) says where it waited and ends the job (MPI_Abort,
// exit status 2), so no rank waits forever.
#pragma once

#include <memory>

#include "rematkit/interpreter/mesh_transport.hpp"
#include "rematkit/mpi/export.hpp"
#include "rematkit/mpi/mpi_session.hpp"

namespace rematkit::mpi {

class REMATKIT_MPI_EXPORT MpiTransport final : public MeshTransport {
 public:
  // A bad-input error, the same on every rank, when the session's ranks are not `mesh`'s devices.
  // `session` must outlive the transport.
  MpiTransport(const MpiSession& session, const Mesh& mesh, double timeout_seconds);
  ~MpiTransport() override;

  const Mesh& mesh() const override { return mesh_; }
  int64_t device() const override { return device_; }

  void all_gather(const std::string& what, const std::vector<int64_t>& group, const void* given, size_t bytes,
                  void* received) override;
  void all_to_all(const std::string& what, const std::vector<int64_t>& group, const void* given, size_t chunk,
                  void* received) override;
  void permute(const std::string& what, int64_t to, const void* given, int64_t from, void* received,
               size_t bytes) override;

  // What this rank has sent so far, and the wall time its exchanges took (agreeing included): what
  // a collective costs per byte here (solve --comm-ns-per-byte).
  struct Traffic {
    int64_t bytes_sent = 0;
    double seconds = 0;
  };
  const Traffic& traffic() const { return traffic_; }

 private:
  struct Groups;
  void agree(const std::string& what, size_t bytes);

  const MpiSession& session_;
  Mesh mesh_;
  int64_t device_ = 0;
  double timeout_seconds_ = 0;
  std::unique_ptr<Groups> groups_;
  Traffic traffic_;
};

}  // namespace rematkit::mpi
