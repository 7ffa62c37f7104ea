// The structure the budget solver's dynamic programs search: alike layers under one checkpoint (a
// chain, chain_dp.hpp), or a sequence of segments (per-layer checkpoints, scan bodies;
// segment_dp.hpp) with the answers each segment chooses among. Found once for every budget; the
// answers it gives at the model budgets of a grid are kept, so every budget sees the same ones.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chain_dp.hpp"
#include "deadline.hpp"
#include "judge.hpp"
#include "segment_dp.hpp"

namespace rematkit::solver {

struct Structure {
  std::vector<Segment> segments;
  std::optional<Chain> chain;  // alike layers under one checkpoint: the rest is unused
  ChainOptions chain_options;
  std::vector<std::vector<SegmentOption>> options_by_segment;
  std::map<int, std::vector<std::vector<char>>> answers_by_shape;  // per member position
  std::vector<int> needs_program;  // shapes whose options the integer program adds
  bool exhaustive = false;         // every segment's answers all tried

  // What the dynamic programs answered, kept for every budget.
  std::optional<Answer> least;  // the structured answer of least modelled peak
  std::vector<int64_t> grid;    // model budgets (structured_proposals.cpp)
  std::map<size_t, std::optional<Answer>> grid_answers;
  double dp_seconds = 0.0;          // the longest dynamic program at a grid point
  double structured_seconds = 0.0;  // the longest one run of the dynamic programs

  // Whether there is a structure to search.
  bool found() const { return chain || !options_by_segment.empty(); }
  // How the method line names it.
  std::string method() const;
};

// The segments of `problem`, and alike layers under one checkpoint or the options of every segment
// (none for a JAX export, which needs one answer per signature across the program, nor with
// offloading or --no-structure). `seeds`: JAX's fixed policies' answers, options too.
Structure find_structure(const Problem& problem, const MemoryModel& model, const std::vector<Answer>& seeds,
                         const Deadline& deadline);

// The integer program's answers for the segments whose options need it, within a share of the time.
void add_program_options(const Problem& problem, const MemoryModel& model, Structure& structure, const Deadline& deadline);

// Whether the program is one general segment, the integer program's, with the planner-side
// searches beside it (not for --no-structure, nor for an export, whose answers keep one decision
// per signature).
bool general_segment(const Problem& problem, const Structure& structure);

}  // namespace rematkit::solver
