// Dynamic programming over the layers of one checkpoint: a chain of alike layers (a deep MLP, a
// stack of transformer blocks under one jax.checkpoint, a whole model decided as one), where a
// recomputed layer needs the layer before it, so segments of the chain are recomputed together.
//
// The answers it searches are runs: the chain is cut into runs of consecutive layers; the values a
// run's top layer hands the next layer (its exports) are kept, those of the layers below the top
// are not, and every layer of a run keeps the same of its other values (the run's pattern). When
// the reverse pass reaches a run, it recomputes the run from the exports kept below it, each value
// where it is first read (partial_eval.cpp, recompute_what). That is Revolve's schedule with one
// recomputation per value (Griewank and Walther 2000), and Rotor's persistent schedules
// (Herrmann et al. 2019; Beaumont et al. 2021) with JAX's per-equation answers: everything_saveable
// (runs of one layer keeping all), nothing_saveable (one run keeping nothing), checkpointing every
// k layers, and their mixtures. Each run's bytes at each moment come from the memory model itself
// (remat_model.hpp), so the peak the dynamic program finds is the model's.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "segments.hpp"

namespace rematkit::solver {

struct Chain {
  std::vector<int> prelude, epilogue;       // kept as they are (saved)
  std::vector<std::vector<int>> layers;     // candidates, per layer in program order
  std::vector<int> exports;                 // positions in a layer the next layer reads
  std::vector<int> last_exports;            // positions in the last layer the epilogue reads
  std::vector<std::pair<int, int>> blocks;  // per layer: its moments [first, last]
  std::pair<int, int> epilogue_block{0, -1};
  std::pair<int, int> prelude_block{0, -1};
};

// The segment as a chain of at least three alike layers, when it is one.
std::optional<Chain> find_chain(const std::vector<Candidate>& candidates, const Segment& segment);

struct ChainAnswer {
  std::vector<char> saved;  // per candidate of the segment's members (as Segment::members)
  double cost = 0.0;
  int64_t peak = 0;         // the model's peak
  int runs = 0;
};

struct ChainOptions {
  std::vector<double> unit_cost;                // per candidate
  std::vector<std::vector<char>> patterns;      // per layer position, besides enumerated ones: seeds
  bool enumerate = true;                        // also every pattern of a layer of few candidates
  int longest_run = 0;                          // 0: min(layers, max(16, 2 sqrt(2 * layers)))
  // Past this, no answer (the caller has a deadline).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// The cheapest run answer whose modelled peak fits `budget` (none when none does); without a
// budget, the one of least peak.
std::optional<ChainAnswer> solve_chain(const std::vector<Candidate>& candidates, const MemoryModel& model,
                                       const Segment& segment, const Chain& chain, const ChainOptions& options,
                                       std::optional<int64_t> budget);

}  // namespace rematkit::solver
