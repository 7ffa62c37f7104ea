// Arena layouts and the arena that runs them. Expected arena sizes come from
// interval arithmetic done by hand; random layouts are checked against brute-force liveness.
#include "rematkit/schedule/arena_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "rematkit/ir/error.hpp"

namespace rematkit {
namespace {

BufferRequest buffer(int64_t bytes, int first, int last, MemorySpace space = MemorySpace::kDevice) {
  return BufferRequest{bytes, first, last, space};
}

// Runs a layout step by step as a scheduler would: acquire what starts at a step, release what ended
// at the step before. Each buffer is filled with its own byte pattern on acquire and checked on
// release, so two buffers sharing bytes while both are live would show.
void run_through(const ArenaLayout& layout, Arena& arena) {
  int last_step = 0;
  for (const BufferRequest& b : layout.buffers) last_step = std::max(last_step, b.last_step);
  for (int step = 0; step <= last_step; ++step) {
    for (size_t i = 0; i < layout.buffers.size(); ++i) {
      if (layout.buffers[i].last_step != step - 1) continue;
      const std::byte* bytes = arena.data(static_cast<int>(i));
      for (int64_t k = 0; k < layout.buffers[i].bytes; ++k)
        ASSERT_EQ(bytes[k], static_cast<std::byte>(i + 1)) << "buffer " << i << " was overwritten";
      arena.release(static_cast<int>(i));
    }
    for (size_t i = 0; i < layout.buffers.size(); ++i) {
      if (layout.buffers[i].first_step != step) continue;
      std::byte* bytes = arena.acquire(static_cast<int>(i));
      if (layout.buffers[i].bytes > 0) std::memset(bytes, static_cast<int>(i + 1), static_cast<size_t>(layout.buffers[i].bytes));
    }
  }
}

TEST(ArenaLayout, SizesRoundUpToTheAlignment) {
  EXPECT_EQ(aligned_bytes(0), 0);
  EXPECT_EQ(aligned_bytes(1), 64);
  EXPECT_EQ(aligned_bytes(64), 64);
  EXPECT_EQ(aligned_bytes(65), 128);
}

TEST(ArenaLayout, AChainNeedsTwoBuffersWhateverItsLength) {
  // Step i reads buffer i-1 and writes buffer i: at most two are alive at once.
  std::vector<BufferRequest> chain;
  for (int i = 0; i < 12; ++i) chain.push_back(buffer(256, i, i + 1));
  const ArenaLayout layout = layout_buffers(chain);
  EXPECT_EQ(layout.arena(MemorySpace::kDevice), 2 * 256);
  EXPECT_EQ(layout.live_peak(MemorySpace::kDevice), 2 * 256);
}

TEST(ArenaLayout, DisjointLifetimesShareOneBuffer) {
  const ArenaLayout layout = layout_buffers({buffer(100, 0, 0), buffer(1000, 1, 2), buffer(10, 3, 3)});
  EXPECT_EQ(layout.arena(MemorySpace::kDevice), 1024);
  EXPECT_EQ(layout.offsets, (std::vector<int64_t>{0, 0, 0}));
}

TEST(ArenaLayout, BuffersAliveTogetherAddUp) {
  const ArenaLayout layout = layout_buffers({buffer(1, 0, 3), buffer(64, 0, 3), buffer(65, 1, 2), buffer(200, 2, 2)});
  EXPECT_EQ(layout.arena(MemorySpace::kDevice), 64 + 64 + 128 + 256);
  EXPECT_EQ(layout.live_peak(MemorySpace::kDevice), 64 + 64 + 128 + 256);
}

TEST(ArenaLayout, ASmallBufferFillsTheGapALargerOneLeft) {
  // a [0,1] 512 bytes, b [2,3] 256 bytes, c [0,3] 512 bytes. Largest first: a at 0, c at 512 (it
  // overlaps a), b fits in a's place once a is dead: 1024 bytes, not 1280.
  const ArenaLayout layout = layout_buffers({buffer(512, 0, 1), buffer(256, 2, 3), buffer(512, 0, 3)});
  EXPECT_EQ(layout.arena(MemorySpace::kDevice), 1024);
  EXPECT_EQ(layout.offsets[1], 0);
}

TEST(ArenaLayout, AmongBuffersOfOneSizeTheLongestLivedMayGoFirst) {
  // a [0,1] 128, b [3,5] 128, c [2,3] 64, d [0,2] 128. Earliest first among the 128s: a at 0, d at
  // 128, b at 0; c overlaps b and d, whose places leave it no gap below 256: 320 bytes. Longest
  // lived first: d at 0, b at 0, a at 128, and c fits at 128 once a is dead: 256, the live peak
  // (a and d at step 0).
  const ArenaLayout layout = layout_buffers({buffer(128, 0, 1), buffer(128, 3, 5), buffer(64, 2, 3), buffer(128, 0, 2)});
  EXPECT_EQ(layout.arena(MemorySpace::kDevice), 256);
  EXPECT_EQ(layout.live_peak(MemorySpace::kDevice), 256);
  EXPECT_EQ(layout.offsets, (std::vector<int64_t>{128, 0, 128, 0}));
}

TEST(ArenaLayout, TheMostLiveStepCountsEverySpace) {
  // Device: a [0,1] 128, c [1,2] 128, b [3,3] 64: 128, 256, 128, 64 bytes. Pinned host: d [3,3]
  // 256: step 3 holds 320 bytes in all, the most.
  EXPECT_EQ(most_live_step(layout_buffers({buffer(128, 0, 1), buffer(128, 1, 2), buffer(64, 3, 3)})), 1);
  EXPECT_EQ(most_live_step(layout_buffers({buffer(128, 0, 1), buffer(128, 1, 2), buffer(64, 3, 3),
                                           buffer(256, 3, 3, MemorySpace::kPinnedHost)})),
            3);
}

TEST(ArenaLayout, EachMemorySpaceHasItsOwnArena) {
  const ArenaLayout layout = layout_buffers({buffer(128, 0, 1), buffer(64, 0, 1, MemorySpace::kPinnedHost),
                                       buffer(64, 1, 1, MemorySpace::kPinnedHost)});
  EXPECT_EQ(layout.arena(MemorySpace::kDevice), 128);
  EXPECT_EQ(layout.arena(MemorySpace::kPinnedHost), 128);
  EXPECT_EQ(layout.offsets[1] + layout.offsets[2], 64);  // one at 0, the other above it
}

TEST(ArenaLayout, EmptyBuffersTakeNoRoom) {
  const ArenaLayout layout = layout_buffers({buffer(0, 0, 5), buffer(64, 0, 5)});
  EXPECT_EQ(layout.arena(MemorySpace::kDevice), 64);
}

TEST(ArenaLayout, MalformedRequestsAreTheCallersMistake) {
  for (const BufferRequest& bad : {buffer(-1, 0, 0), buffer(8, 3, 2), buffer(8, -1, 0)}) {
    try {
      layout_buffers({bad});
      ADD_FAILURE() << "accepted " << bad.bytes << " bytes over " << bad.first_step << ".." << bad.last_step;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_EQ(std::string(e.what()).rfind("arena layout: buffer 0 has ", 0), 0u) << e.what();
    }
  }
}

TEST(ArenaLayout, RandomLayoutsAreValidAndTheArenaMeasuresWhatWasPredicted) {
  std::mt19937 rng(20261129);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> requests;
    const int steps = 1 + static_cast<int>(rng() % 30);
    const int count = static_cast<int>(rng() % 40);
    for (int i = 0; i < count; ++i) {
      const int first = static_cast<int>(rng() % static_cast<unsigned>(steps));
      const int last = first + static_cast<int>(rng() % static_cast<unsigned>(steps - first));
      requests.push_back(buffer(static_cast<int64_t>(rng() % 5000), first, last,
                                rng() % 4 == 0 ? MemorySpace::kPinnedHost : MemorySpace::kDevice));
    }
    const ArenaLayout layout = layout_buffers(requests);
    ASSERT_EQ(layout.buffers.size(), requests.size());

    for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost}) {
      // Brute force: the bytes alive at each step, and the highest byte any buffer reaches.
      int64_t live_peak = 0, top = 0;
      for (int step = 0; step < steps; ++step) {
        int64_t live = 0;
        for (const BufferRequest& b : requests)
          if (b.space == space && b.first_step <= step && step <= b.last_step) live += aligned_bytes(b.bytes);
        live_peak = std::max(live_peak, live);
      }
      for (size_t i = 0; i < requests.size(); ++i)
        if (requests[i].space == space && requests[i].bytes > 0)
          top = std::max(top, layout.offsets[i] + aligned_bytes(requests[i].bytes));
      EXPECT_EQ(layout.live_peak(space), live_peak);
      EXPECT_EQ(layout.arena(space), top);
      EXPECT_GE(layout.arena(space), live_peak);
    }
    for (int64_t offset : layout.offsets) EXPECT_EQ(offset % kBufferAlignment, 0);

    Arena arena(layout);
    run_through(layout, arena);
    for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost}) {
      EXPECT_EQ(arena.high_water(space), layout.arena(space)) << "trial " << trial;
      EXPECT_EQ(arena.live_high_water(space), layout.live_peak(space)) << "trial " << trial;
    }
  }
}

TEST(Arena, RefusesBuffersThePlanDidNotMeanToBeLiveTogether) {
  // Disjoint lifetimes share offset 0; acquiring both at once is a scheduling bug.
  const ArenaLayout layout = layout_buffers({buffer(64, 0, 0), buffer(64, 1, 1)});
  Arena arena(layout);
  arena.acquire(0);
  EXPECT_THROW(arena.acquire(1), Error);
  EXPECT_THROW(arena.acquire(0), Error);  // live already
  arena.release(0);
  EXPECT_THROW(arena.release(0), Error);
  arena.acquire(1);
  EXPECT_EQ(arena.data(0), arena.data(1));
}

TEST(Arena, MarksRestartFromWhatIsLive) {
  const ArenaLayout layout = layout_buffers({buffer(64, 0, 2), buffer(128, 0, 0), buffer(64, 1, 2)});
  Arena arena(layout);
  arena.acquire(0);
  arena.acquire(1);
  EXPECT_EQ(arena.live_high_water(MemorySpace::kDevice), 192);
  arena.release(1);
  arena.reset_marks();
  EXPECT_EQ(arena.live_high_water(MemorySpace::kDevice), 64);
  EXPECT_EQ(arena.high_water(MemorySpace::kDevice), layout.offsets[0] + 64);
  arena.acquire(2);
  EXPECT_EQ(arena.live_high_water(MemorySpace::kDevice), 128);
}

}  // namespace
}  // namespace rematkit
