// GEMM, blocked for the caches. B is packed into panels two vectors wide (the caller's packing
// buffer, the kernel's workspace), or read in place where it is small or A has few rows. Each task
// packs its block of A's rows into tiles on its stack, a depth block at a time (a narrow block reads
// them in place), and a register-blocked micro-kernel (kTileRows rows x 2 vectors of accumulators)
// runs every tile against a panel's depth block while that block sits in L1. Operands are read by
// strides, so a transposed one or a head of attention's [B, S, H, Dh] needs no copy. An accumulator
// starts from C's partial sum after the first depth block, so each C element is still one chain of
// fused multiply-adds in k order: the bits do not depend on the blocking or the thread count. Blocks
// of rows x panels run in parallel on oneTBB; the SIMD functions are resolved once a call, outside
// the parallel loop.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/gemm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>

#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// A tile's accumulators (rows x 2 vectors), B's two vectors and A's broadcast fit the register file:
// 32 vector registers on AVX-512, 16 on AVX2 and SSE4.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kTileRows = 8;
#else
constexpr size_t kTileRows = 6;
#endif

constexpr size_t kFloatsPerLine = 64 / sizeof(float);
// How far ahead A is prefetched where it is streamed from memory: steps along k that each lie on a
// line of their own (A transposed), and floats along a row read in place (four lines).
constexpr size_t kPrefetchSteps = 24;
constexpr size_t kRowPrefetchFloats = 64;

static_assert(kTileRows <= 8, "gemm()'s tiles scratch (kMaxTileRows) holds 8 rows a tile");

size_t PanelWidth() { return 2 * hn::Lanes(hn::ScalableTag<float>()); }
size_t TileRows() { return kTileRows; }

// C[kRows, 2 vectors] (+)= A's tile x a panel's block (depth rows `panel_stride` apart). A's
// element (r, kk) is a[r * a_row + kk * a_depth]: a packed tile's strides (1, kTileRows) are
// constants where kPacked. `first`: the depth block starting at k = 0, whose sums start from zero.
template <size_t kRows, bool kPacked>
HWY_INLINE void Tile(const float* HWY_RESTRICT a, size_t a_row, size_t a_depth, const float* HWY_RESTRICT panel,
                     size_t panel_stride, size_t depth, float* c, size_t ldc, bool first) {
  const size_t row_stride = kPacked ? 1 : a_row, depth_stride = kPacked ? kTileRows : a_depth;
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  using V = hn::Vec<decltype(d)>;
  V acc0[kRows], acc1[kRows];
#pragma GCC unroll 16
  for (size_t r = 0; r < kRows; ++r) {
    acc0[r] = first ? hn::Zero(d) : hn::LoadU(d, c + r * ldc);
    acc1[r] = first ? hn::Zero(d) : hn::LoadU(d, c + r * ldc + lanes);
  }
  for (size_t kk = 0; kk < depth; ++kk) {
    if (!kPacked) {  // A's rows where they lie, streamed from memory: ahead of the hardware's prefetchers
      if (depth_stride == 1) {
        if (kk % kFloatsPerLine == 0)
#pragma GCC unroll 16
          for (size_t r = 0; r < kRows; ++r) __builtin_prefetch(a + r * row_stride + kk + kRowPrefetchFloats);
      } else if (row_stride == 1) {  // A transposed: a step's rows share a line, each step its own
        __builtin_prefetch(a + (kk + kPrefetchSteps) * depth_stride);
      }
    }
    const V b0 = hn::LoadU(d, panel + kk * panel_stride);
    const V b1 = hn::LoadU(d, panel + kk * panel_stride + lanes);
#pragma GCC unroll 16
    for (size_t r = 0; r < kRows; ++r) {
      const V av = hn::Set(d, a[kk * depth_stride + r * row_stride]);
      acc0[r] = hn::MulAdd(av, b0, acc0[r]);
      acc1[r] = hn::MulAdd(av, b1, acc1[r]);
    }
  }
#pragma GCC unroll 16
  for (size_t r = 0; r < kRows; ++r) {
    hn::StoreU(acc0[r], d, c + r * ldc);
    hn::StoreU(acc1[r], d, c + r * ldc + lanes);
  }
}

// A tile past C's last row or column, run on a full tile's copy of C's part, which goes back; a
// single row is run as one. A tile of several rows reads kTileRows of them: a ragged one is packed
// (padded with zeros).
void EdgeTile(const float* a, size_t a_row, size_t a_depth, const float* panel, size_t panel_stride, size_t depth,
              float* c, size_t ldc, bool first, size_t rows, size_t cols) {
  const size_t width = PanelWidth();
  if (rows == 1 && cols == width) return Tile<1, false>(a, a_row, a_depth, panel, panel_stride, depth, c, ldc, first);
  HWY_ALIGN float edge[kTileRows * 2 * hn::MaxLanes(hn::ScalableTag<float>())];
  if (!first)
    for (size_t r = 0; r < rows; ++r) std::memcpy(edge + r * width, c + r * ldc, cols * sizeof(float));
  if (rows == 1) Tile<1, false>(a, a_row, a_depth, panel, panel_stride, depth, edge, width, first);
  else Tile<kTileRows, false>(a, a_row, a_depth, panel, panel_stride, depth, edge, width, first);  // rows padded
  for (size_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, edge + r * width, cols * sizeof(float));
}

// Rows [row_begin, row_end) x panels [panel_begin, panel_end) of C = A B (C's rows `ldc` apart),
// over depth [k_begin, k_end) of all of k (C holds the sums before k_begin). `packing` holds every
// panel (k x width each, zero past column n), or where B is read in place (`b`, rows `ldb` apart;
// else null) its ragged last one alone.
// `tiles` is scratch for the block's rows rounded up to whole tiles x `depth_block` floats, where
// A's tiles are packed: all of them, or with `pack_a` false (a narrow block, for which packing would
// cost about what multiplying does) only a ragged last one of several rows, the others read in place.
// `panel_copy` (depth_block x width floats, or null) holds an in-place panel's depth block while a
// block of several tiles runs against it: read where they lie, B's rows a power-of-two-ish stride
// apart (a head of v, [B, S, H, Dh]; a 512-wide matrix) fall into a few of the L1's sets and leave it.
void GemmBlock(const MatrixView& a, bool pack_a, const float* b, size_t ldb, const float* packing, float* c,
               size_t ldc, size_t row_begin, size_t row_end, size_t panel_begin, size_t panel_end, size_t n,
               size_t k, size_t k_begin, size_t k_end, size_t depth_block, float* tiles, float* panel_copy) {
  const size_t width = PanelWidth();
  const size_t rows = row_end - row_begin;
  // Whether the tile at row t is packed: a ragged one of several rows always is (its rows padded).
  auto packed = [&](size_t t) { return pack_a || (t + kTileRows > rows && rows - t > 1); };
  for (size_t k0 = k_begin; k0 < k_end; k0 += depth_block) {
    const size_t depth = std::min(depth_block, k_end - k0);
    // A's rows x [k0, k0 + depth) as tiles of kTileRows rows, depth-major, zero past row_end.
    // A transposed: each step along k reads the block's rows, which lie in one run, across all its
    // tiles at once (a tile at a time, each line would be read once a tile, kTileRows of them apart).
    const size_t whole_tiles = rows / kTileRows * kTileRows;
    const bool transposed_block = pack_a && a.row_stride == 1;
    if (transposed_block)
      for (size_t kk = 0; kk < depth; ++kk) {
        const float* run = a.data + row_begin + (k0 + kk) * a.col_stride;
        // Steps along k lie a cache line or more apart, too far for the hardware's prefetchers.
        if (kk + kPrefetchSteps < depth)
          for (size_t t = 0; t < whole_tiles; t += kFloatsPerLine)
            __builtin_prefetch(run + kPrefetchSteps * a.col_stride + t);
        for (size_t t = 0; t < whole_tiles; t += kTileRows)
          std::memcpy(tiles + t * depth + kk * kTileRows, run + t, kTileRows * sizeof(float));
      }
    for (size_t t = 0; t < rows; t += kTileRows) {
      if (!packed(t) || (transposed_block && t < whole_tiles)) continue;
      float* tile = tiles + t * depth;
      const size_t tile_rows = std::min(kTileRows, rows - t);
      const float* corner = a.data + (row_begin + t) * a.row_stride + k0 * a.col_stride;
      if (a.col_stride == 1 && tile_rows == kTileRows) {  // rows as they lie: a tile is their transpose
        for (size_t kk = 0; kk < depth; ++kk)
#pragma GCC unroll 16
          for (size_t r = 0; r < kTileRows; ++r) tile[kk * kTileRows + r] = corner[r * a.row_stride + kk];
      } else if (a.row_stride == 1 && tile_rows == kTileRows) {  // A transposed: a tile's rows lie in a run
        for (size_t kk = 0; kk < depth; ++kk)
          std::memcpy(tile + kk * kTileRows, corner + kk * a.col_stride, kTileRows * sizeof(float));
      } else {
        for (size_t kk = 0; kk < depth; ++kk)
          for (size_t r = 0; r < kTileRows; ++r)
            tile[kk * kTileRows + r] = r < tile_rows ? corner[r * a.row_stride + kk * a.col_stride] : 0.0f;
      }
    }
    auto tile_times_panel = [&](size_t t, size_t p, const float* panel, size_t stride) {
      const size_t j0 = p * width;
      const size_t cols = std::min(width, n - j0);
      float* out = c + (row_begin + t) * ldc + j0;
      const size_t tile_rows = std::min(kTileRows, rows - t);
      const bool is_packed = packed(t);
      const float* from = is_packed ? tiles + t * depth : a.data + (row_begin + t) * a.row_stride + k0 * a.col_stride;
      const size_t from_row = is_packed ? 1 : a.row_stride, from_depth = is_packed ? kTileRows : a.col_stride;
      if (tile_rows == kTileRows && cols == width) {
        if (is_packed) Tile<kTileRows, true>(from, 1, kTileRows, panel, stride, depth, out, ldc, k0 == 0);
        else Tile<kTileRows, false>(from, from_row, from_depth, panel, stride, depth, out, ldc, k0 == 0);
      } else {
        EdgeTile(from, from_row, from_depth, panel, stride, depth, out, ldc, k0 == 0, tile_rows, cols);
      }
    };
    // Panel p's depth block: copied where B is read in place and several tiles run against it.
    auto panel_block = [&](size_t p, float* copy, size_t& stride) -> const float* {
      const size_t j0 = p * width;
      if (!b || n - j0 < width) {
        stride = width;
        return packing + (b ? 0 : p * k * width) + k0 * width;
      }
      const float* panel = b + k0 * ldb + j0;
      stride = ldb;
      if (rows <= kTileRows || !copy) return panel;
      for (size_t kk = 0; kk < depth; ++kk) std::memcpy(copy + kk * width, panel + kk * ldb, width * sizeof(float));
      stride = width;
      return copy;
    };
    for (size_t p = panel_begin; p < panel_end; ++p) {
      size_t stride;
      const float* panel = panel_block(p, panel_copy, stride);
      for (size_t t = 0; t < rows; t += kTileRows) tile_times_panel(t, p, panel, stride);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

namespace rematkit::hwy_backend {

HWY_EXPORT(PanelWidth);
HWY_EXPORT(TileRows);
HWY_EXPORT(GemmBlock);

namespace {

// A depth block of a panel (256 x 2 vectors: 32 KiB on AVX-512) stays in L1 while a task's tiles
// run against it, and its A tiles (64 rows x 256 on AVX-512, 64 KiB) stay in L2 while it runs all
// its panels, so packing A costs a float for every kMaxPanelsPerBlock x 2 vectors multiply-adds.
constexpr size_t kDepthBlock = 256;
constexpr size_t kTilesPerBlock = 8;
constexpr size_t kMaxPanelsPerBlock = 32;
constexpr size_t kMinPanelsPerBlock = 4;
constexpr size_t kMinBlocks = 8;  // for two threads' tasks to come out even
// Packed B this large is run a slab at a time (gemm()): it would not stay in L2 between row blocks.
constexpr size_t kSlabFromBytes = size_t{1} << 20;
// B's rows are read in place, and only a ragged last panel packed, where packing would cost about
// what multiplying it does (few rows of A) or B is small enough to stay in L2 as it lies.
constexpr size_t kPackFromRows = 128;
constexpr size_t kInPlaceBytes = size_t{2} << 20;
// A block this many columns wide or narrower reads A's rows in place: its tiles would be packed for
// a few panels only (attention's values, 64 wide).
constexpr size_t kReadAInPlaceCols = 128;
constexpr size_t kLongDepthStepBytes = 1024;
constexpr size_t kMaxTileRows = 8;  // kTileRows of any target, for the tiles' scratch
constexpr size_t kMaxPanelWidth = 32;  // PanelWidth() on AVX-512; a wider target's panels are not copied

// Whether gemm packs all of B; else it reads B's rows in place.
bool gemm_packs_b(size_t m, size_t n, size_t k, bool b_rows_contiguous) {
  return !b_rows_contiguous || (m >= kPackFromRows && k * n * sizeof(float) > kInPlaceBytes);
}

}  // namespace

size_t gemm_packing_floats(size_t m, size_t n, size_t k, bool b_rows_contiguous) {
  const size_t width = HWY_DYNAMIC_DISPATCH(PanelWidth)();
  if (gemm_packs_b(m, n, k, b_rows_contiguous)) return (n + width - 1) / width * k * width;
  return n % width ? k * width : 0;  // the ragged last panel
}

void gemm(const MatrixView& a, const MatrixView& b, float* c, size_t m, size_t n, size_t k, float* packing,
          const Epilogue* epilogue) {
  if (m == 0 || n == 0) return;
  const size_t width = HWY_DYNAMIC_DISPATCH(PanelWidth)();
  const size_t block_rows = kTilesPerBlock * HWY_DYNAMIC_DISPATCH(TileRows)();
  auto* block = &HWY_DYNAMIC_DISPATCH(GemmBlock);  // resolved once (PanelWidth's call chose the target)
  const size_t panels = (n + width - 1) / width;
  const size_t row_blocks = (m + block_rows - 1) / block_rows;
  // Panels a block: as many as kMaxPanelsPerBlock, fewer where rows alone give too few blocks to share.
  const size_t split = std::max<size_t>(1, (kMinBlocks + row_blocks - 1) / row_blocks);
  const size_t panels_per_block = std::clamp<size_t>((panels + split - 1) / split, kMinPanelsPerBlock, kMaxPanelsPerBlock);
  const size_t panel_blocks = (panels + panels_per_block - 1) / panels_per_block;
  if (k == 0) {  // an empty sum
    for (size_t i = 0; i < m; ++i) std::fill(c + i * n, c + (i + 1) * n, 0.0f);
    if (epilogue) (*epilogue)(0, m, 0, n);
    return;
  }
  const bool in_place = !gemm_packs_b(m, n, k, b.col_stride == 1);
  // A transposed with long steps along k is packed however narrow the block: read in place, each
  // step would be a cache line of its own, and strides of 2 KiB and more share the L1's sets.
  const bool pack_a = a.col_stride * sizeof(float) >= kLongDepthStepBytes;
  // Panel p of B, k x width, zero-padded past column n.
  auto pack = [&](size_t p) {
    float* to = packing + (in_place ? 0 : p * k * width);
    const size_t j0 = p * width, cols = std::min(width, n - j0);
    for (size_t kk = 0; kk < k; ++kk) {
      const float* row = b.data + kk * b.row_stride + j0 * b.col_stride;
      if (b.col_stride == 1) std::memcpy(to + kk * width, row, cols * sizeof(float));
      else for (size_t j = 0; j < cols; ++j) to[kk * width + j] = row[j * b.col_stride];
      std::fill(to + kk * width + cols, to + (kk + 1) * width, 0.0f);
    }
  };
  // Rows of row block i x panels [p0, p1), over depth [k0, k1), then its epilogue once k1 is k.
  auto run_part = [&](size_t i, size_t p0, size_t p1, size_t k0, size_t k1) {
    alignas(64) float tiles[kTilesPerBlock * kMaxTileRows * kDepthBlock];
    alignas(64) float panel_copy[kDepthBlock * kMaxPanelWidth];
    const size_t r0 = i * block_rows, r1 = std::min(m, r0 + block_rows);
    const bool pack_tiles = pack_a || (p1 - p0) * width > kReadAInPlaceCols;
    block(a, pack_tiles, in_place ? b.data : nullptr, b.row_stride, packing, c, n, r0, r1, p0, p1, n, k, k0, k1, kDepthBlock,
          tiles, width <= kMaxPanelWidth ? panel_copy : nullptr);
    if (epilogue && k1 == k) (*epilogue)(r0, r1, p0 * width, std::min(n, p1 * width));
  };
  // Block (i, j): rows of row block i x panels of panel block j, all of k.
  auto run = [&](size_t i, size_t j) {
    run_part(i, j * panels_per_block, std::min(panels, (j + 1) * panels_per_block), 0, k);
  };
  // Below a few million flops, waking a second thread costs more than it saves.
  const bool parallel = m * n * k >= (size_t{1} << 22);
  if (in_place) {
    if (n % width) pack(panels - 1);
  } else if (parallel) {
    tbb::parallel_for(size_t{0}, panels, pack);
  } else {
    for (size_t p = 0; p < panels; ++p) pack(p);
  }
  if (!in_place && row_blocks >= kMinBlocks && k * panels * width * sizeof(float) > kSlabFromBytes) {
    // B packed past L2: one depth block of a group of panels (a slab, kDepthBlock x kMaxPanelsPerBlock
    // panels: 1 MiB on AVX-512) at a time, run by every row block while it stays in L2. A block at a
    // time over all of k, each would stream its panels of B from memory again.
    const size_t group = std::min(panels, kMaxPanelsPerBlock);
    for (size_t p0 = 0; p0 < panels; p0 += group)
      for (size_t k0 = 0; k0 < k; k0 += kDepthBlock) {
        const size_t p1 = std::min(panels, p0 + group), k1 = std::min(k, k0 + kDepthBlock);
        auto slab = [&](size_t i) { run_part(i, p0, p1, k0, k1); };
        if (parallel) tbb::parallel_for(size_t{0}, row_blocks, slab);
        else for (size_t i = 0; i < row_blocks; ++i) slab(i);
      }
    return;
  }
  if (!parallel) {
    for (size_t i = 0; i < row_blocks; ++i)
      for (size_t j = 0; j < panel_blocks; ++j) run(i, j);
    return;
  }
  tbb::parallel_for(tbb::blocked_range2d<size_t>(0, row_blocks, 1, 0, panel_blocks, 1),
                    [&](const tbb::blocked_range2d<size_t>& r) {
                      for (size_t i = r.rows().begin(); i < r.rows().end(); ++i)
                        for (size_t j = r.cols().begin(); j < r.cols().end(); ++j) run(i, j);
                    });
}

}  // namespace rematkit::hwy_backend
#endif
