// MPI for the life of an object: initialized when it is made, finalized when it goes, whatever is
// thrown in between; and this process's rank among how many.
#pragma once

#include <cstdint>
#include <string>

#include "rematkit/ir/error.hpp"
#include "rematkit/mpi/export.hpp"

namespace rematkit::mpi {

// An error every rank has at once (MpiSession::agree found it): each stops at the same place.
class REMATKIT_MPI_EXPORT RanksStopped : public Error {
 public:
  using Error::Error;
};

class REMATKIT_MPI_EXPORT MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Every rank says what it is about to run (`what`, moving `bytes`), in one small all-gather over
  // the world, and each compares: where they differ, every rank fails with the same error naming
  // both; where a rank said stopped(), with its error (RanksStopped). A wait past `timeout_seconds` ends the job
  // (request_wait.hpp).
  void agree(const std::string& what, uint64_t bytes, double timeout_seconds) const;
  // What a rank that failed says instead, where the others agree() next: every rank then fails
  // with the first stopped rank's error. A RanksStopped is every rank's already: rethrown.
  [[noreturn]] void stopped(const Error& error, double timeout_seconds) const;

  // Returns once every rank has called it; a rank that waits past `timeout_seconds` ends the job
  // (request_wait.hpp).
  void barrier(double timeout_seconds) const;

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace rematkit::mpi
