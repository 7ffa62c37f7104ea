// Highway's fills and copies of 16 MiB and more (kStreamFromBytes: a zeroed gradient table, a
// scatter-add's copied table) run in chunks on oneTBB with non-temporal stores (bitwise.cpp's fill32
// and copy32). Every element is checked against values worked out here, on shapes whose element
// counts leave a partial last chunk and vector, at one thread and two.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <bit>
#include <cstdint>
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

// The one equation of `text`, prepared on Highway.
std::unique_ptr<PreparedKernel> on_highway(const std::string& text) {
  static BackendInstance highway(default_plugins(), "highway");
  const Program program = parse_program(text, "bulk");
  const Equation& e = program.eqns.at(0);
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

}  // namespace
}  // namespace rematkit::testing
