// GEMM: B is packed into panels two vectors wide (zero-padded), and a register-blocked micro-kernel
// computes up to 4 rows x 2 vectors of C with fused multiply-adds in k order. Row blocks run in
// parallel on oneTBB; the SIMD function is resolved once per call, outside the parallel loop.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/gemm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstring>

#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kRowsPerTile = 4;

size_t PanelWidth() { return 2 * hn::Lanes(hn::ScalableTag<float>()); }

// C[rows, panel] of one panel: `rows` rows of A (stride k) against a packed panel (k x width).
template <size_t kRows>
HWY_INLINE void Tile(const float* a, size_t k, const float* panel, float* c, size_t ldc, size_t cols) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  using V = hn::Vec<decltype(d)>;
  V acc0[kRows], acc1[kRows];
  for (size_t r = 0; r < kRows; ++r) acc0[r] = acc1[r] = hn::Zero(d);
  for (size_t kk = 0; kk < k; ++kk) {
    const V b0 = hn::Load(d, panel + kk * 2 * lanes);
    const V b1 = hn::Load(d, panel + kk * 2 * lanes + lanes);
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

// Rows [row_begin, row_end) of C = A B with B packed.
void GemmRows(const float* a, const float* packed, float* c, size_t row_begin, size_t row_end, size_t n, size_t k) {
  const size_t width = PanelWidth();
  for (size_t j0 = 0, p = 0; j0 < n; j0 += width, ++p) {
    const float* panel = packed + p * k * width;
    const size_t cols = n - j0 < width ? n - j0 : width;
    size_t i = row_begin;
    for (; i + kRowsPerTile <= row_end; i += kRowsPerTile) Tile<kRowsPerTile>(a + i * k, k, panel, c + i * n + j0, n, cols);
    for (; i < row_end; ++i) Tile<1>(a + i * k, k, panel, c + i * n + j0, n, cols);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <hwy/aligned_allocator.h>

namespace rematkit::hwy_backend {

HWY_EXPORT(PanelWidth);
HWY_EXPORT(GemmRows);

void gemm(const float* a, const float* b, float* c, size_t m, size_t n, size_t k) {
  const size_t width = HWY_DYNAMIC_DISPATCH(PanelWidth)();
  const size_t panels = (n + width - 1) / width;
  auto packed = hwy::AllocateAligned<float>(std::max<size_t>(panels * k * width, 1));
  for (size_t p = 0; p < panels; ++p)
    for (size_t kk = 0; kk < k; ++kk)
      for (size_t j = 0; j < width; ++j) {
        const size_t col = p * width + j;
        packed[(p * k + kk) * width + j] = col < n ? b[kk * n + col] : 0.0f;
      }
  auto* rows = &HWY_DYNAMIC_DISPATCH(GemmRows);  // resolved once (PanelWidth's call chose the target)
  constexpr size_t kRowsPerTask = 16;
  if (m * n * k < (size_t{1} << 16)) {
    rows(a, packed.get(), c, 0, m, n, k);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<size_t>(0, m, kRowsPerTask), [&](const tbb::blocked_range<size_t>& r) {
    rows(a, packed.get(), c, r.begin(), r.end(), n, k);
  });
}

}  // namespace rematkit::hwy_backend
#endif
