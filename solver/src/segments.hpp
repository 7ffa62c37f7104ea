// The program's candidates as a sequence of segments: the candidates one checkpoint decides (a
// layer's nn.remat, a scan body's), merged where their moments overlap. Segments follow one
// another in the backward pass, so one segment's answer reaches the others only through the bytes
// it keeps until its moments come: the structure dynamic programming over segments uses
// (segment_program.hpp). Segments of one shape (the same candidates, reads and moments, shifted)
// are alike, and share their options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "remat_model.hpp"

namespace rematkit::solver {

struct Segment {
  std::vector<int> members;         // candidates, ascending
  int first_moment = 0, last_moment = -1;  // its span (moments it or its stack can be alive at)
  int shape = 0;                    // equal for alike segments
};

// In the order of the backward pass (ascending spans); every moment is in one span.
std::vector<Segment> find_segments(const std::vector<Candidate>& candidates, int moments);

// What one answer for a segment's members does.
struct SegmentOption {
  std::vector<char> saved;      // per member
  int64_t held = 0;             // its bytes alive at every moment before its span (kept, stacked)
  int64_t held_forward = 0;     // its bytes alive in the forward pass and the prologue
  double cost = 0.0;            // its recomputation, in the solver's cost units
  std::vector<int64_t> alive;   // per moment of its span: its members' bytes
};

// The option `saved` (per member) of `segment`, costed by `unit_cost` (per candidate).
SegmentOption option_of(const std::vector<Candidate>& candidates, const Segment& segment, std::vector<char> saved,
                        const std::vector<double>& unit_cost);

// The largest base + fragmentation + alive over the segment's span: its peak with nothing else held.
int64_t option_peak(const MemoryModel& model, const Segment& segment, const SegmentOption& option);

// Removes options another is no worse than in every respect (held, held_forward, cost, and alive at
// every moment); keeps the first of equal ones.
void keep_undominated(std::vector<SegmentOption>& options);

}  // namespace rematkit::solver
