// The arena layout of a step program: each buffer gets an offset in one arena per memory space, chosen
// from the buffers' lifetimes so that buffers alive at the same step never share bytes. The arena's
// size is the predicted peak; an Arena running the steps measures the peak it really touches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rematkit/plugin_host/buffer_alignment.hpp"  // kBufferAlignment
#include "rematkit/core_export.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit {

constexpr size_t kNumMemorySpaces = 2;  // MemorySpace::kDevice, MemorySpace::kPinnedHost

// A buffer alive from the start of step `first_step` to the end of step `last_step` (inclusive).
struct BufferRequest {
  int64_t bytes = 0;
  int first_step = 0;
  int last_step = 0;
  MemorySpace space = MemorySpace::kDevice;
};

// Where each buffer lives: an offset in its memory space's arena.
struct ArenaLayout {
  std::vector<BufferRequest> buffers;
  std::vector<int64_t> offsets;  // per buffer, in its space's arena
  // Per memory space: the arena's size (the predicted peak) and the most bytes alive at one step
  // (a lower bound no placement can beat; the gap between the two is fragmentation).
  std::array<int64_t, kNumMemorySpaces> arena_bytes{};
  std::array<int64_t, kNumMemorySpaces> live_peak_bytes{};

  int64_t arena(MemorySpace space) const { return arena_bytes[static_cast<size_t>(space)]; }
  int64_t live_peak(MemorySpace space) const { return live_peak_bytes[static_cast<size_t>(space)]; }
};

// The bytes a buffer takes in an arena: its size rounded up to kBufferAlignment.
REMATKIT_CORE_EXPORT int64_t aligned_bytes(int64_t bytes);

// Greedy by size, as TFLite's arena planner and XLA's heap simulator do: the largest buffers are
// placed first, each in the smallest gap left between the buffers whose lifetimes overlap its own.
// Deterministic: done twice, ties broken by first step and then by longest lifetime first (each
// then by request order), and the smaller arena kept.
REMATKIT_CORE_EXPORT ArenaLayout layout_buffers(std::vector<BufferRequest> buffers);

// The first step at which the most bytes are alive, every memory space together.
REMATKIT_CORE_EXPORT int most_live_step(const ArenaLayout& layout);

// The arenas of a layout, allocated once and reused by every run. acquire/release follow the
// program's steps and record the high-water marks; a buffer acquired twice or released while not
// live is an internal error. With `check_overlaps` the arena also checks that no two live buffers
// overlap, a scan of the live buffers at every acquire: on in tests and debug builds, off in the
// executors of a release build, where it cost more than a small kernel.
class REMATKIT_CORE_EXPORT Arena {
 public:
  explicit Arena(const ArenaLayout& layout, bool check_overlaps = true);
  // An arena whose device space is `device_memory` (at least the layout's device arena bytes,
  // aligned to kBufferAlignment), owned by the caller: a loop body's, inside its loop's workspace.
  Arena(const ArenaLayout& layout, std::byte* device_memory, bool check_overlaps = true);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  std::byte* acquire(int buffer);  // internal error if it overlaps a live buffer or is live already
  void release(int buffer);
  std::byte* data(int buffer) const;  // a live buffer's bytes

  // The highest byte any acquired buffer reached, and the most bytes live at once, per space,
  // since construction or reset_marks().
  int64_t high_water(MemorySpace space) const { return high_water_[static_cast<size_t>(space)]; }
  int64_t live_high_water(MemorySpace space) const { return live_high_water_[static_cast<size_t>(space)]; }
  void reset_marks();

 private:
  ArenaLayout layout_;
  std::array<std::byte*, kNumMemorySpaces> base_{};
  std::array<bool, kNumMemorySpaces> owned_{};
  bool check_overlaps_ = true;
  std::vector<int> live_;          // buffers acquired and not yet released, in no order
  std::vector<size_t> live_slot_;  // per buffer: its place in live_, or SIZE_MAX
  std::array<int64_t, kNumMemorySpaces> live_bytes_{}, high_water_{}, live_high_water_{};
};

}  // namespace rematkit
