// Waiting on MPI requests with a deadline: a rank that stopped or hangs would otherwise leave the
// others waiting forever.
#pragma once

#include <mpi.h>

#include <string>

namespace rematkit::mpi {

// Waits for `requests` while driving MPI's progress. Past `timeout` seconds it says on stderr
// that rank `rank` waited at `what`, and ends the whole job (MPI_Abort, exit status 2).
void wait_or_abort(MPI_Request* requests, int n, const std::string& what, int rank, double timeout);

}  // namespace rematkit::mpi
