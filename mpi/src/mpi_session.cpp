#include "rematkit/mpi/mpi_session.hpp"

#include <mpi.h>

#include <cstring>
#include <vector>

#include "request_wait.hpp"

namespace rematkit::mpi {

namespace {

// What a rank says it is about to run. A rank that stopped says 'B' or 'I' (the kind of its
// error) and the error; one that runs on says ' ' and the collective.
struct Header {
  uint64_t hash = 0;  // of the whole description
  uint64_t bytes = 0;
  char stopped = ' ';
  char what[239] = {};  // its start, for the message
};

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<Header> exchange(const Header& mine, int size, int rank, const std::string& what, double timeout) {
  std::vector<Header> all(static_cast<size_t>(size));
  MPI_Request request;
  MPI_Iallgather(&mine, sizeof(Header), MPI_BYTE, all.data(), sizeof(Header), MPI_BYTE, MPI_COMM_WORLD, &request);
  wait_or_abort(&request, 1, what, rank, timeout);
  return all;
}

Header header(char stopped, const std::string& what, uint64_t bytes) {
  Header h;
  h.hash = fnv1a(what);
  h.bytes = bytes;
  h.stopped = stopped;
  std::strncpy(h.what, what.c_str(), sizeof(h.what) - 1);
  return h;
}

// Every rank's verdict from the same headers: the first rank that stopped, else the first that
// differs from rank 0.
void judge(const std::vector<Header>& all) {
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].stopped != ' ')
      throw RanksStopped(all[r].stopped == 'B' ? ErrorKind::kBadInput : ErrorKind::kInternal,
                  all.size() > 1 && r > 0 ? "rank " + std::to_string(r) + ": " + all[r].what : std::string(all[r].what));
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r].hash != all[0].hash || all[r].bytes != all[0].bytes)
      throw RanksStopped(ErrorKind::kBadInput, "the ranks disagree at a collective: rank 0 runs " + std::string(all[0].what) + " (" +
           std::to_string(all[0].bytes) + " bytes) where rank " + std::to_string(r) + " runs " + all[r].what + " (" +
           std::to_string(all[r].bytes) + " bytes)");
}

}  // namespace

MpiSession::MpiSession() {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::agree(const std::string& what, uint64_t bytes, double timeout_seconds) const {
  judge(exchange(header(' ', what, bytes), size_, rank_, what, timeout_seconds));
}

void MpiSession::stopped(const Error& error, double timeout_seconds) const {
  if (dynamic_cast<const RanksStopped*>(&error)) throw RanksStopped(error.kind(), error.what());  // every rank's already
  const char kind = error.kind() == ErrorKind::kBadInput ? 'B' : 'I';
  judge(exchange(header(kind, error.what(), 0), size_, rank_, "a stop", timeout_seconds));
  throw error;  // not reached: judge() throws the first stop's
}

void MpiSession::barrier(double timeout_seconds) const {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  wait_or_abort(&request, 1, "the end of the run", rank_, timeout_seconds);
}

}  // namespace rematkit::mpi
