// Timing several contenders (training steps of different policies, a GEMM) so that their medians
// can be compared to a few percent on a noisy, shared machine: every round runs each contender once,
// in an order shuffled per round, so that slow phases of the machine (another process's build, a
// frequency change) fall on all of them alike instead of on whichever ran then. Rounds go on until
// the 95% interval of every contender's median is within the target, or the time cap.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "rematkit/sweep/median_interval.hpp"

namespace rematkit::bench {

struct Contender {
  Contender(std::string name_, std::function<void()> run_) : name(std::move(name_)), run(std::move(run_)) {}
  std::string name;
  std::function<void()> run;  // one step
  // Steps per sample, set by the warm-up so that a sample lasts at least min_sample_ms: below a
  // few ms the clock's resolution and the loop's overhead would be a visible share of a sample.
  int64_t batch = 1;
  std::vector<double> ms;  // one per round: the batch's time divided by its steps
  sweep::MedianInterval interval;
};

struct RoundsOptions {
  double target = 0.02;  // the most an interval's half-width may be, as a share of its median
  double confidence = 0.95;
  double max_seconds = 60;  // warm-up and rounds together
  double min_sample_ms = 2;
  // No verdict on fewer samples or sooner: a handful of samples can give a narrow interval by chance,
  // and a configuration timed in half a second can fall whole into a slow phase of a shared machine
  // (another virtual machine on the same cores), which no interval within the run can show.
  size_t min_samples = 20;
  double min_seconds = 3;  // warm-up and rounds together
  double warm_up_seconds = 0.2;  // per contender, at least two steps
  uint64_t seed = 0;
};

struct RoundsResult {
  bool converged = false;
  int64_t rounds = 0;
  double seconds = 0;
};

// The interval's half-width as a share of its median; infinite when there is no median yet.
inline double relative_half_width(const sweep::MedianInterval& m) {
  return m.median > 0 ? (m.high - m.low) / 2 / m.median : std::numeric_limits<double>::infinity();
}

inline bool within(const Contender& c, const RoundsOptions& options) {
  return c.ms.size() >= options.min_samples && c.interval.coverage >= options.confidence &&
         relative_half_width(c.interval) <= options.target;
}

// Warm-up (caches, lazily built kernels, the thread pools' first wake-up), then interleaved rounds.
inline RoundsResult run_rounds(std::vector<Contender>& contenders, const RoundsOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };

  for (Contender& c : contenders) {
    const auto warm_start = Clock::now();
    double fastest = std::numeric_limits<double>::infinity();
    for (int steps = 0; steps < 2 || seconds_since(warm_start) < options.warm_up_seconds; ++steps) {
      const auto t = Clock::now();
      c.run();
      // The fastest warm step sizes the batch: the first ones are the slow ones.
      if (steps > 0) fastest = std::min(fastest, seconds_since(t) * 1e3);
    }
    c.batch = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(options.min_sample_ms / std::max(fastest, 1e-6))));
  }

  RoundsResult result;
  std::mt19937_64 shuffle(options.seed);
  std::vector<size_t> order(contenders.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto next_check = static_cast<int64_t>(options.min_samples);
  while (true) {
    std::shuffle(order.begin(), order.end(), shuffle);
    for (size_t i : order) {
      Contender& c = contenders[i];
      const auto t = Clock::now();
      for (int64_t s = 0; s < c.batch; ++s) c.run();
      c.ms.push_back(seconds_since(t) * 1e3 / static_cast<double>(c.batch));
    }
    ++result.rounds;
    result.seconds = seconds_since(started);
    const bool out_of_time = result.seconds >= options.max_seconds;
    // median_interval's cost grows with the square of the samples: look again only once there are
    // a tenth more (or at the end), which keeps the checks a small share of the time at any size.
    if (!out_of_time && (result.rounds < next_check || result.seconds < options.min_seconds)) continue;
    next_check = result.rounds + std::max<int64_t>(1, result.rounds / 10);
    result.converged = true;
    for (Contender& c : contenders) {
      c.interval = sweep::median_interval(c.ms, options.confidence);
      result.converged = result.converged && within(c, options);
    }
    if (result.converged || out_of_time) break;
  }
  result.seconds = seconds_since(started);
  return result;
}

}  // namespace rematkit::bench
