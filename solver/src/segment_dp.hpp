// Dynamic programming over segments (segments.hpp): one option per segment, so that at every moment
// the segment's own bytes, and what the segments later in the backward pass still keep for their
// moments, fit the budget, at the least cost. The segments the backward pass reaches last are
// decided first: what they keep, every earlier moment must hold too. This is the recurrence of
// Rotor (Herrmann et al. 2019) and of Beaumont et al. 2021 for chains, over the answers a JAX policy
// can give each segment. Exact for the memory model over the options it is given.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "segments.hpp"

namespace rematkit::solver {

struct SegmentChoice {
  std::vector<int> option;  // per segment: the index of its option
  double cost = 0.0;
  int64_t peak = 0;  // the model's peak of the whole answer
};

// The cheapest choice whose modelled peak is within `budget`; none when no choice fits.
std::optional<SegmentChoice> cheapest_within(const MemoryModel& model, const std::vector<Segment>& segments,
                                             const std::vector<std::vector<SegmentOption>>& options, int64_t budget);
// The choice of least modelled peak (the cheapest of those).
SegmentChoice smallest_peak(const MemoryModel& model, const std::vector<Segment>& segments,
                            const std::vector<std::vector<SegmentOption>>& options);

}  // namespace rematkit::solver
