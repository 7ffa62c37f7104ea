// The wall-clock deadline of one solve: `rematkit solve --time-limit S` ends within S (plus 10%),
// whatever the phase (model building, CBC, planner calls, greedy improvement), because every phase
// asks this how long is left and stops in time.
#pragma once

#include <algorithm>
#include <chrono>

namespace rematkit::solver {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Deadline(double seconds)
      : start_(Clock::now()),
        end_(start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(seconds, 0.0)))) {}

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // Seconds left; 0 once it has passed.
  double left() const { return std::max(0.0, std::chrono::duration<double>(end_ - Clock::now()).count()); }
  bool passed() const { return Clock::now() >= end_; }
  double limit() const { return std::chrono::duration<double>(end_ - start_).count(); }
  Clock::time_point end() const { return end_; }

 private:
  Clock::time_point start_, end_;
};

}  // namespace rematkit::solver
