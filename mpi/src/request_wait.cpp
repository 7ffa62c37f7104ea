#include "request_wait.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

namespace rematkit::mpi {

void wait_or_abort(MPI_Request* requests, int n, const std::string& what, int rank, double timeout) {
  const auto start = std::chrono::steady_clock::now();
  for (int tries = 0;; ++tries) {
    int done = 0;
    MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
    if (done) return;
    // A short spin for the common case, then sleeps: a waiting rank should not take a core from a
    // rank still computing on the same node.
    if (tries > 2000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout) {
      std::fprintf(stderr, "rematkit: rank %d waited %.0f s at %s for the other ranks: one stopped or hangs\n", rank,
                   waited, what.c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
}

}  // namespace rematkit::mpi
