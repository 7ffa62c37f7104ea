// OpenBLAS's thread count is one number for the whole process (0.3.21 has no per-call or
// per-thread count: openblas_set_num_threads_local came in 0.3.27), while each blas backend has its
// own num_threads. run_on() runs a call with the count its kernel wants: calls that want the count
// already set run at once, side by side (several programs at one thread each, as `rematkit
// compare` runs them, never wait for each other); a call that wants another count waits until
// the running ones return, sets it and runs alone. So no product runs with another backend's
// count, at the price of serializing products whose counts differ, which only happens when
// programs with different --threads run at once in one process.
#pragma once

#include <cblas.h>

#include <mutex>
#include <shared_mutex>

namespace rematkit_blas {

class ThreadCount {
 public:
  template <typename Call>
  void run_on(int threads, Call&& call) {
    {
      std::shared_lock<std::shared_mutex> shared(mutex_);
      if (current_ == threads) return call();
    }
    std::unique_lock<std::shared_mutex> alone(mutex_);
    if (current_ != threads) {
      openblas_set_num_threads(threads);
      current_ = threads;
    }
    call();
  }

 private:
  std::shared_mutex mutex_;
  int current_ = -1;  // unknown until this process's first product: set it then
};

// The process's one count (every backend created from this plugin shares it).
inline ThreadCount& thread_count() {
  static ThreadCount count;
  return count;
}

}  // namespace rematkit_blas
