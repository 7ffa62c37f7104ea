// GEMM: C is computed in panels two vectors wide, each by a register-blocked micro-kernel (up to 4
// rows x 2 vectors) with fused multiply-adds in k order. A B that fits in cache is read in place
// (its rows are contiguous) and only a ragged last panel is copied, zero-padded; a larger B is
// packed panel by panel first, since reading it with a stride of whole rows thrashes the cache; the
// copies go to the caller's packing buffer (the kernel's workspace). Blocks of rows x panels run in
// parallel on oneTBB; the SIMD function is resolved once per call, outside the parallel loop.
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

constexpr size_t kRowsPerTile = 4;

size_t PanelWidth() { return 2 * hn::Lanes(hn::ScalableTag<float>()); }

// C[rows, panel] of one panel: `rows` rows of A (stride k) against a panel of B (k rows, stride ldb).
template <size_t kRows>
HWY_INLINE void Tile(const float* a, size_t k, const float* panel, size_t ldb, float* c, size_t ldc, size_t cols) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  using V = hn::Vec<decltype(d)>;
  V acc0[kRows], acc1[kRows];
  for (size_t r = 0; r < kRows; ++r) acc0[r] = acc1[r] = hn::Zero(d);
  for (size_t kk = 0; kk < k; ++kk) {
    const V b0 = hn::LoadU(d, panel + kk * ldb);
    const V b1 = hn::LoadU(d, panel + kk * ldb + lanes);
    for (size_t r = 0; r < kRows; ++r) {
      const V av = hn::Set(d, a[r * k + kk]);
      acc0[r] = hn::MulAdd(av, b0, acc0[r]);
      acc1[r] = hn::MulAdd(av, b1, acc1[r]);
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    if (cols == 2 * lanes) {
      hn::StoreU(acc0[r], d, c + r * ldc);
      hn::StoreU(acc1[r], d, c + r * ldc + lanes);
    } else {
      HWY_ALIGN float buf[2 * hn::MaxLanes(d)];
      hn::Store(acc0[r], d, buf);
      hn::Store(acc1[r], d, buf + lanes);
      std::memcpy(c + r * ldc, buf, cols * sizeof(float));
    }
  }
}

// Rows [row_begin, row_end) x panels [panel_begin, panel_end) of C = A B. With `packed`, B holds
// every panel packed (k x width each); otherwise B is read in place and `ragged` is the last panel
// copied and zero-padded (k x width), or null when n is a multiple of the panel width.
void GemmBlock(const float* a, const float* b, bool packed, const float* ragged, float* c, size_t row_begin,
               size_t row_end, size_t panel_begin, size_t panel_end, size_t n, size_t k) {
  const size_t width = PanelWidth();
  for (size_t p = panel_begin; p < panel_end; ++p) {
    const size_t j0 = p * width;
    const size_t cols = n - j0 < width ? n - j0 : width;
    const float* panel = packed ? b + p * k * width : cols < width ? ragged : b + j0;
    const size_t ldb = packed || cols < width ? width : n;
    size_t i = row_begin;
    for (; i + kRowsPerTile <= row_end; i += kRowsPerTile)
      Tile<kRowsPerTile>(a + i * k, k, panel, ldb, c + i * n + j0, n, cols);
    for (; i < row_end; ++i) Tile<1>(a + i * k, k, panel, ldb, c + i * n + j0, n, cols);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <tbb/blocked_range.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

namespace rematkit::hwy_backend {

HWY_EXPORT(PanelWidth);
HWY_EXPORT(GemmBlock);

namespace {

// Whether gemm() packs all of B, by B's bytes: about twice the L2 of a core.
bool packs_all(size_t n, size_t k) { return k * n * sizeof(float) > (size_t{2} << 20); }

}  // namespace

size_t gemm_packing_floats(size_t n, size_t k) {
  const size_t width = HWY_DYNAMIC_DISPATCH(PanelWidth)();
  const size_t panels = (n + width - 1) / width;
  if (packs_all(n, k)) return panels * k * width;
  return n % width ? k * width : 0;
}

void gemm(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, float* packing, const Epilogue* epilogue) {
  const size_t width = HWY_DYNAMIC_DISPATCH(PanelWidth)();
  const size_t panels = (n + width - 1) / width;
  auto* block = &HWY_DYNAMIC_DISPATCH(GemmBlock);  // resolved once (PanelWidth's call chose the target)
  // Panel p of B, k x width, zero-padded past column n.
  auto pack = [&](size_t p, float* to) {
    const size_t j0 = p * width;
    for (size_t kk = 0; kk < k; ++kk)
      for (size_t j = 0; j < width; ++j) to[kk * width + j] = j0 + j < n ? b[kk * n + j0 + j] : 0.0f;
  };
  // Below a few million flops, waking a second thread costs more than it saves.
  const bool parallel = m * n * k >= (size_t{1} << 22);
  const bool pack_all = packs_all(n, k);
  // The packed panels (or the ragged last one) go to the caller's `packing`, of
  // gemm_packing_floats(n, k) floats: the kernel's workspace, so nothing is allocated per call.
  if (pack_all) {
    if (parallel) tbb::parallel_for(size_t{0}, panels, [&](size_t p) { pack(p, packing + p * k * width); });
    else for (size_t p = 0; p < panels; ++p) pack(p, packing + p * k * width);
  } else if (n % width) {
    pack(panels - 1, packing);
  }
  const float* source = pack_all ? packing : b;
  const float* ragged = pack_all || n % width == 0 ? nullptr : packing;
  auto finish = [&](size_t r0, size_t r1, size_t p0, size_t p1) {
    if (epilogue) (*epilogue)(r0, r1, p0 * width, std::min(n, p1 * width));
  };
  if (!parallel) {
    block(a, source, pack_all, ragged, c, 0, m, 0, panels, n, k);
    finish(0, m, 0, panels);
    return;
  }
  // Tasks of 16 rows x 4 panels: each output element is still summed by one task, in k order.
  tbb::parallel_for(tbb::blocked_range2d<size_t>(0, m, 16, 0, panels, 4), [&](const tbb::blocked_range2d<size_t>& r) {
    block(a, source, pack_all, ragged, c, r.rows().begin(), r.rows().end(), r.cols().begin(), r.cols().end(), n, k);
    finish(r.rows().begin(), r.rows().end(), r.cols().begin(), r.cols().end());
  });
}

}  // namespace rematkit::hwy_backend
#endif
