// Highway's fills and copies of 16 MiB and more (kStreamFromBytes: a zeroed gradient table, a
// scatter-add's copied table) run in chunks on oneTBB with non-temporal stores (bitwise.cpp's fill32
// and copy32), and its layout moves of 1 MiB and more in pieces on oneTBB (layout.hpp's
// over_items). Every element is checked against values worked out here, on shapes whose element
// counts leave a partial last chunk, vector and tile, at one thread and two.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

constexpr int64_t kRows = 4099, kCols = 1025;  // 16.8 MB of f32
static_assert(kRows * kCols * 4 >= (int64_t{16} << 20), "over the size fills and copies are streamed from");

// The equation giving `text`'s output (a split is an equation per piece), prepared on Highway.
std::unique_ptr<PreparedKernel> on_highway(const std::string& text) {
  static BackendInstance highway(default_plugins(), "highway");
  const Program program = parse_program(text, "bulk");
  const Equation* found = nullptr;
  for (const Equation& candidate : program.eqns)
    if (candidate.outputs.at(0) == program.outvars.at(0).var) found = &candidate;
  if (!found) return nullptr;
  const Equation& e = *found;
  std::vector<Type> in;
  for (const Atom& a : e.inputs) in.push_back(program.type_of(a));
  return highway.prepare(e.prim, e.params, in, {program.vars[static_cast<size_t>(e.outputs.at(0))].type}, "bulk");
}

TEST(HighwayBulkMoves, AScalarBroadcastPastTheCachesFillsEveryElement) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const auto kernel = on_highway(
      "{ lambda ; a:f32[]. let b:f32[4099,1025] = broadcast_in_dim[broadcast_dimensions=() shape=(4099, 1025)] a in (b,) }");
  ASSERT_NE(kernel, nullptr);
  for (size_t threads : {1, 2}) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    const float value = -2.5f;
    std::vector<float> out(static_cast<size_t>(kRows * kCols) + 1, 7.0f);  // one past the end, untouched
    kernel->execute_allocating_workspace({&value}, {out.data() + 1});       // a start off the vector boundary
    size_t wrong = 0;
    for (size_t i = 1; i < out.size(); ++i) wrong += out[i] == value ? 0 : 1;
    EXPECT_EQ(wrong, 0u) << threads << " thread(s)";
    EXPECT_EQ(out[0], 7.0f) << "written before its buffer";
  }
}

TEST(HighwayBulkMoves, AScatterAddsLargeTableIsCopiedThenItsRowsAdded) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const auto kernel = on_highway(
      "{ lambda ; t:f32[4099,1025] i:i32[6,1] u:f32[6,1025]. let s:f32[4099,1025] = scatter-add["
      "dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), "
      "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) "
      "mode=GatherScatterMode.FILL_OR_DROP] t i u in (s,) }");
  ASSERT_NE(kernel, nullptr);
  std::vector<float> table(static_cast<size_t>(kRows * kCols)), updates(6 * kCols);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i % 1000) * 0.25f;
  for (size_t i = 0; i < updates.size(); ++i) updates[i] = 1.0f + static_cast<float>(i % 7);
  const std::vector<int32_t> rows{0, 4098, 17, 17, 9999, 2048};  // a repeat, and one out of the table (dropped)
  std::vector<float> expected = table;
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r] < kRows)
      for (int64_t c = 0; c < kCols; ++c) expected[static_cast<size_t>(rows[r] * kCols + c)] += updates[r * kCols + static_cast<size_t>(c)];
  for (size_t threads : {1, 2}) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    std::vector<float> out(table.size(), -1.0f);
    kernel->execute_allocating_workspace({table.data(), rows.data(), updates.data()}, {out.data()});
    size_t wrong = 0, first = out.size();
    for (size_t i = 0; i < out.size(); ++i)
      if (std::bit_cast<uint32_t>(out[i]) != std::bit_cast<uint32_t>(expected[i]) && ++wrong == 1) first = i;
    EXPECT_EQ(wrong, 0u) << threads << " thread(s), first at " << first;
  }
}

// The value at each index of a row-major shape, and its coordinates.
std::vector<int64_t> coordinates(size_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t i = shape.size(); i-- > 0; flat /= static_cast<size_t>(shape[i])) c[i] = static_cast<int64_t>(flat % static_cast<size_t>(shape[i]));
  return c;
}
size_t flat_index(const std::vector<int64_t>& c, const std::vector<int64_t>& shape) {
  size_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * static_cast<size_t>(shape[i]) + static_cast<size_t>(c[i]);
  return flat;
}

// `text`'s one equation on Highway over operands holding their own flat indices (each operand i
// offset by i * 2^22, so that every value tells where it came from), at one thread and two,
// against `expected` of those operands.
void expect_moves(const std::string& text, const std::vector<std::vector<int64_t>>& operand_shapes,
                  const std::function<std::vector<float>(const std::vector<std::vector<float>>&)>& expected) {
  SCOPED_TRACE(text);
  const auto kernel = on_highway(text);
  ASSERT_NE(kernel, nullptr);
  std::vector<std::vector<float>> operands;
  std::vector<const void*> inputs;
  for (size_t i = 0; i < operand_shapes.size(); ++i) {
    size_t n = 1;
    for (int64_t d : operand_shapes[i]) n *= static_cast<size_t>(d);
    operands.emplace_back(n);
    for (size_t k = 0; k < n; ++k) operands.back()[k] = static_cast<float>(k + (i << 22));
  }
  for (const auto& o : operands) inputs.push_back(o.data());
  const std::vector<float> want = expected(operands);
  ASSERT_GE(want.size() * sizeof(float), size_t{1} << 20) << "under the size moves are split from";
  for (size_t threads : {1, 2}) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    std::vector<float> got(want.size(), -1.0f);
    kernel->execute_allocating_workspace(inputs, {got.data()});
    size_t wrong = 0, first = got.size();
    for (size_t k = 0; k < got.size(); ++k)
      if (got[k] != want[k] && ++wrong == 1) first = k;
    EXPECT_EQ(wrong, 0u) << threads << " thread(s), first at " << first;
  }
}

std::function<std::vector<float>(const std::vector<std::vector<float>>&)> permuted(std::vector<int64_t> shape,
                                                                                    std::vector<int64_t> perm) {
  return [=](const std::vector<std::vector<float>>& in) {
    std::vector<int64_t> out_shape;
    for (int64_t p : perm) out_shape.push_back(shape[static_cast<size_t>(p)]);
    std::vector<float> out(in[0].size());
    for (size_t o = 0; o < out.size(); ++o) {
      const std::vector<int64_t> c = coordinates(o, out_shape);
      std::vector<int64_t> from(shape.size());
      for (size_t i = 0; i < perm.size(); ++i) from[static_cast<size_t>(perm[i])] = c[i];
      out[o] = in[0][flat_index(from, shape)];
    }
    return out;
  };
}

TEST(HighwayBulkMoves, LayoutMovesOfAMegabyteAndMoreSplitOverThreadsKeepEveryElement) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  // Whole rows (attention's heads moved past the sequence), 32 x 32 tiles with ragged edges, and
  // one element at a time.
  expect_moves("{ lambda ; a:f32[4,130,12,67]. let b:f32[4,12,130,67] = transpose[permutation=(0, 2, 1, 3)] a in (b,) }",
               {{4, 130, 12, 67}}, permuted({4, 130, 12, 67}, {0, 2, 1, 3}));
  expect_moves("{ lambda ; a:f32[3,300,401]. let b:f32[3,401,300] = transpose[permutation=(0, 2, 1)] a in (b,) }",
               {{3, 300, 401}}, permuted({3, 300, 401}, {0, 2, 1}));
  expect_moves("{ lambda ; a:f32[60,70,80]. let b:f32[80,70,60] = transpose[permutation=(2, 1, 0)] a in (b,) }",
               {{60, 70, 80}}, permuted({60, 70, 80}, {2, 1, 0}));
  // A pad, a split and a concatenate along the last axis of [2, 300, *].
  expect_moves("{ lambda ; a:f32[2,300,500] v:f32[]. let b:f32[2,300,637] = pad[padding_config=((0, 0, 0), (0, 0, 0), "
               "(100, 37, 0))] a v in (b,) }",
               {{2, 300, 500}, {}}, [](const std::vector<std::vector<float>>& in) {
                 std::vector<float> out(2 * 300 * 637);
                 for (size_t r = 0; r < 600; ++r)
                   for (size_t c = 0; c < 637; ++c)
                     out[r * 637 + c] = c >= 100 && c < 600 ? in[0][r * 500 + c - 100] : in[1][0];
                 return out;
               });
  expect_moves("{ lambda ; a:f32[2,300,637]. let b:f32[2,300,100] c:f32[2,300,500] d:f32[2,300,37] = split[axis=2 "
               "sizes=(100, 500, 37)] a in (c,) }",
               {{2, 300, 637}}, [](const std::vector<std::vector<float>>& in) {
                 std::vector<float> out(2 * 300 * 500);
                 for (size_t r = 0; r < 600; ++r)
                   for (size_t c = 0; c < 500; ++c) out[r * 500 + c] = in[0][r * 637 + 100 + c];
                 return out;
               });
  expect_moves("{ lambda ; a:f32[2,300,100] b:f32[2,300,537]. let c:f32[2,300,637] = concatenate[dimension=2] a b in (c,) }",
               {{2, 300, 100}, {2, 300, 537}}, [](const std::vector<std::vector<float>>& in) {
                 std::vector<float> out(2 * 300 * 637);
                 for (size_t r = 0; r < 600; ++r)
                   for (size_t c = 0; c < 637; ++c) out[r * 637 + c] = c < 100 ? in[0][r * 100 + c] : in[1][r * 537 + c - 100];
                 return out;
               });
}

}  // namespace
}  // namespace rematkit::testing
