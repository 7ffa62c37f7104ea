// Highway's GEMM (gemm.cpp): blocked over depth, rows and panels, with operands read in place by
// strides where their dims merge. Every element is checked, bit for bit, against one chain of fused
// multiply-adds in k order worked out here from dot_general's definition, at one thread and two:
// shapes with ragged tiles and panels, several depth blocks, transposed operands, attention's heads
// read from [B, S, H, Dh], and an operand whose contracting dims do not merge (copied first).
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// The program's one dot_general, prepared on Highway.
// Values that make rounding differ with the order of a sum.
std::vector<float> values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(0.37f * static_cast<float>(i) + 0.11f) * (1.0f + static_cast<float>(i % 7) / 3.0f);
  return v;
}

// out[b][i][j] = fma chain over kk < depth of lhs(b, i, kk) * rhs(b, kk, j), k in order from 0.
template <typename Lhs, typename Rhs>
std::vector<float> chain(size_t batch, size_t m, size_t n, size_t depth, const Lhs& lhs, const Rhs& rhs) {
  std::vector<float> out(batch * m * n);
  for (size_t b = 0; b < batch; ++b)
    for (size_t i = 0; i < m; ++i)
      for (size_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (size_t kk = 0; kk < depth; ++kk) acc = std::fma(lhs(b, i, kk), rhs(b, kk, j), acc);
        out[(b * m + i) * n + j] = acc;
      }
  return out;
}

void expect_chain(const std::string& text, const std::vector<float>& a, const std::vector<float>& b,
                  const std::vector<float>& expected) {
  const auto kernel = first_equation_on_highway(text);
  ASSERT_NE(kernel, nullptr) << text;
  for (size_t threads : {1, 2}) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    std::vector<float> got(expected.size() + 1, 7.0f);
    kernel->execute_allocating_workspace({a.data(), b.data()}, {got.data()});
    size_t wrong = 0, first = expected.size();
    for (size_t i = 0; i < expected.size(); ++i)
      if (std::memcmp(&got[i], &expected[i], sizeof(float)) != 0) wrong += 1, first = std::min(first, i);
    EXPECT_EQ(wrong, 0u) << threads << " thread(s); first wrong at " << first << ": " << got[first] << " against "
                         << expected[first];
    EXPECT_EQ(got.back(), 7.0f) << "written past the result";
  }
}

// A [m, k] x B [k, n], each operand stored as it lies or transposed (A as [k, m], B as [n, k]).
void expect_2d_chain(size_t m, size_t k, size_t n, bool a_transposed = false, bool b_transposed = false) {
  const auto a = values(m * k, 1.0f), b = values(k * n, 0.5f);
  auto shape = [](size_t rows, size_t cols) { return "[" + std::to_string(rows) + "," + std::to_string(cols) + "]"; };
  const std::string text = "{ lambda ; a:f32" + (a_transposed ? shape(k, m) : shape(m, k)) + " b:f32" +
                           (b_transposed ? shape(n, k) : shape(k, n)) + ". let c:f32" + shape(m, n) +
                           " = dot_general[dimension_numbers=(([" + (a_transposed ? "0" : "1") + "], [" +
                           (b_transposed ? "1" : "0") + "]), ([], []))] a b in (c,) }";
  expect_chain(text, a, b,
               chain(1, m, n, k, [&](size_t, size_t i, size_t kk) { return a_transposed ? a[kk * m + i] : a[i * k + kk]; },
                     [&](size_t, size_t kk, size_t j) { return b_transposed ? b[j * k + kk] : b[kk * n + j]; }));
}

TEST(HighwayGemm, RaggedTilesPanelsAndDepthBlocksSumInKOrder) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  // 200 rows: three blocks of 64 and 8 ragged; 300 columns: a ragged panel; depth 517: two
  // blocks of 256 and 5 more. Over 2^22 multiply-adds, so blocks run in parallel. B (620 KB) is
  // read in place.
  expect_2d_chain(200, 517, 300);
  // B over the 2 MiB read in place, with 130 rows: every panel packed, the last ragged.
  expect_2d_chain(130, 300, 1800);
  // Small: one block, on one thread whatever is allowed; A's rows read in place but a ragged tile.
  expect_2d_chain(13, 300, 37);
  // A last row alone, read in place, against a full panel and a ragged one; and a single row.
  expect_2d_chain(9, 70, 37);
  expect_2d_chain(1, 64, 64);
}

TEST(HighwayGemm, TransposedOperandsAreReadInPlace) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  expect_2d_chain(75, 517, 83, true, true);
  // A transposed with steps of 1080 bytes along k: packed, each step's run across a block's whole
  // tiles at once (the last block: one whole tile and 6 rows padded); B's full panel copied for the
  // blocks of several tiles.
  expect_2d_chain(270, 517, 40, true, false);
}

TEST(HighwayGemm, AttentionsHeadsAreReadByStrides) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  // Scores: q [B, S, H, Dh] against k [B, T, H, Dh] over Dh, batched over (B, H).
  constexpr size_t B = 2, S = 37, T = 41, H = 3, Dh = 20;
  const auto q = values(B * S * H * Dh, 1.0f), key = values(B * T * H * Dh, 0.5f);
  expect_chain("{ lambda ; q:f32[2,37,3,20] k:f32[2,41,3,20]. let s:f32[2,3,37,41] = dot_general["
               "dimension_numbers=(([3], [3]), ([0, 2], [0, 2]))] q k in (s,) }",
               q, key,
               chain(B * H, S, T, Dh, [&](size_t bh, size_t i, size_t kk) { return q[((bh / H * S + i) * H + bh % H) * Dh + kk]; },
                     [&](size_t bh, size_t kk, size_t j) { return key[((bh / H * T + j) * H + bh % H) * Dh + kk]; }));
  // Values: p [B, H, S, T] against v [B, T, H, Dh] over T, batched over (B, H); 300 keys make two
  // depth blocks.
  constexpr size_t T2 = 300;
  const auto p = values(B * H * S * T2, 0.125f), v = values(B * T2 * H * Dh, 1.0f);
  expect_chain("{ lambda ; p:f32[2,3,37,300] v:f32[2,300,3,20]. let o:f32[2,3,37,20] = dot_general["
               "dimension_numbers=(([3], [1]), ([0, 1], [0, 2]))] p v in (o,) }",
               p, v,
               chain(B * H, S, Dh, T2, [&](size_t bh, size_t i, size_t kk) { return p[(bh * S + i) * T2 + kk]; },
                     [&](size_t bh, size_t kk, size_t j) { return v[((bh / H * T2 + kk) * H + bh % H) * Dh + j]; }));
}

TEST(HighwayGemm, PackedBPastL2RunsASlabAtATime) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  // B transposed, so packed: 130 columns (a ragged panel) x depth 1900 is over 1 MiB packed on
  // AVX-512 and AVX2 alike, so every row block (520 rows: 9 on AVX-512, 11 on AVX2) runs one
  // depth block of B's panels at a time, seven of them, the last ragged; each C element resumes its
  // chain from the slab before.
  expect_2d_chain(520, 1900, 130, false, true);
}

TEST(HighwayGemm, ContractingDimsThatDoNotMergeAreCopiedFirst) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  // a [5, 6, 7] contracts dims 0 and 2 around its free dim 1: no one stride walks them.
  constexpr size_t d0 = 5, d1 = 6, d2 = 7, n = 9;
  const auto a = values(d0 * d1 * d2, 1.0f), b = values(d0 * d2 * n, 0.5f);
  expect_chain("{ lambda ; a:f32[5,6,7] b:f32[5,7,9]. let c:f32[6,9] = dot_general["
               "dimension_numbers=(([0, 2], [0, 1]), ([], []))] a b in (c,) }",
               a, b, chain(1, d1, n, d0 * d2, [&](size_t, size_t i, size_t kk) { return a[(kk / d2 * d1 + i) * d2 + kk % d2]; },
                           [&](size_t, size_t kk, size_t j) { return b[kk * n + j]; }));
}

}  // namespace
}  // namespace rematkit::testing
