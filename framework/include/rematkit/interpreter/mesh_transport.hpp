// How one device of a mesh exchanges bytes with the others: all that running collectives needs of
// the mesh. Two implementations: the simulated mesh in one process (simulated_mesh.hpp: a thread
// per device) and MPI (one rank per device, the rematkit_mpi library). What each collective
// computes is the core's (device_collective.hpp), the same over either, so the two give the same
// bits.
//
// Every device calls the same exchanges in the same order (the program is SPMD). `what` names the
// collective; a device whose `what` differs from the others', or one that stops, is an error on
// every device rather than a wait that never ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/mesh.hpp"

namespace rematkit {

class REMATKIT_CORE_EXPORT MeshTransport {
 public:
  virtual ~MeshTransport();

  virtual const Mesh& mesh() const = 0;
  virtual int64_t device() const = 0;

  // Each member of `group` (device ids, the same list on each member, this device among them)
  // gives `bytes` bytes and receives every member's, in the group's order (group.size() * bytes).
  // Every device of the mesh calls it at once, each with its own group.
  virtual void all_gather(const std::string& what, const std::vector<int64_t>& group, const void* given, size_t bytes,
                          void* received) = 0;
  // Each member gives group.size() chunks of `chunk` bytes, its k-th for the k-th member, and
  // receives every member's chunk for it, in the group's order.
  virtual void all_to_all(const std::string& what, const std::vector<int64_t>& group, const void* given, size_t chunk,
                          void* received) = 0;
  // Sends `bytes` bytes to device `to` and receives as many from device `from` (-1: none). Every
  // device of the mesh calls it at once.
  virtual void permute(const std::string& what, int64_t to, const void* given, int64_t from, void* received,
                       size_t bytes) = 0;
};

}  // namespace rematkit
