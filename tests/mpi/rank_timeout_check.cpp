// Under `mpirun -n 2`: rank 1 never comes to the collective rank 0 waits at (it sleeps, as a rank
// that hangs would). Rank 0 must say where it waited and end the job within its timeout of 1 s;
// ctest looks for the line and its own timeout fails a job that hangs instead.
#include <chrono>
#include <thread>

#include "rematkit/mpi/mpi_transport.hpp"

int main() {
  rematkit::mpi::MpiSession session;
  const rematkit::Mesh mesh = rematkit::parse_mesh_option("x=2", {});
  rematkit::mpi::MpiTransport transport(session, mesh, 1.0);
  if (session.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    return 0;
  }
  float mine = 1, all[2] = {};
  transport.all_gather("all_gather[axis_name=x]", {0, 1}, &mine, sizeof mine, all);
  return 0;  // not reached: the wait ends the job
}
