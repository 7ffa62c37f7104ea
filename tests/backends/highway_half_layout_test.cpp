// Highway's layout, indexing and reduction kinds on bf16 and f16 (backends/highway/layout_kernels.hpp,
// row_kernels.hpp, reduction_kernels.hpp) give the reference backend's bits: each equation, read
// from a one-line program with ragged shapes, is prepared on both backends and run on the same
// buffers. Moves copy bits, so their operands are every bit pattern but the signalling NaNs (the
// reference reads each element into a double, which quiets them; Highway's f32 moves keep them
// too). Sums and extremes read every pattern: both accumulate in double, in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

const DType kHalves[] = {DType::kBF16, DType::kF16};

size_t elements_of(const Type& t) {
  size_t n = 1;
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  return n;
}

size_t width(DType t) { return t == DType::kBool ? 1 : (t == DType::kBF16 || t == DType::kF16) ? 2 : 4; }

bool is_signalling_nan(DType t, uint16_t h) {
  if (t == DType::kBF16) return (h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0 && !(h & 0x40);
  return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0 && !(h & 0x200);
}

// A half operand's bytes: random bit patterns (quieted where `quiet`), or values from -4 to 4 in
// steps of 1/8 (sums that stay finite and often tie).
std::vector<uint8_t> half_operand(DType t, size_t n, std::mt19937& rng, bool quiet, bool small) {
  std::vector<uint8_t> bytes(2 * n);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h = static_cast<uint16_t>(rng());
    if (small) {
      const float v = static_cast<float>(static_cast<int>(rng() % 65) - 32) / 8.0f;
      const uint32_t f = std::bit_cast<uint32_t>(v);
      h = t == DType::kBF16 ? static_cast<uint16_t>(f >> 16)
                            : static_cast<uint16_t>(v == 0 ? 0 : ((f >> 16) & 0x8000) | ((((f >> 23) & 0xFF) - 112) << 10) | ((f >> 13) & 0x3FF));
    }
    if (quiet && is_signalling_nan(t, h)) h |= t == DType::kBF16 ? 0x40 : 0x200;
    std::memcpy(&bytes[2 * i], &h, 2);
  }
  return bytes;
}

// i32 row indices in [-2, rows + 2): some out of the table, many repeated.
std::vector<uint8_t> index_operand(size_t n, int32_t rows, std::mt19937& rng) {
  std::vector<uint8_t> bytes(4 * n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t v = static_cast<int32_t>(rng() % static_cast<uint32_t>(rows + 4)) - 2;
    std::memcpy(&bytes[4 * i], &v, 4);
  }
  return bytes;
}

// Program text with every `T` replaced by the dtype's name.
std::string typed(std::string text, DType t) {
  for (size_t at = text.find('T'); at != std::string::npos; at = text.find('T', at))
    text.replace(at, 1, std::string(dtype_name(t)));
  return text;
}

// The equation giving the program's output, on highway and on the reference backend over the same
// operands (`given`, or drawn: bits for each half one, indices for each i32 one): the same output
// bytes, and highway runs it.
void expect_reference_bits(const std::string& text, DType t, bool moves, bool small = false,
                           const std::vector<std::vector<uint8_t>>& given = {}) {
  const Program program = parse_program(typed(text, t), "case");
  SCOPED_TRACE(typed(text, t));
  const Equation* found = nullptr;
  for (const Equation& e : program.eqns)
    if (e.outputs.at(0) == program.outvars.at(0).var) found = &e;
  ASSERT_NE(found, nullptr);
  const Equation& eqn = *found;
  const Params& params = eqn.params;
  static BackendInstance highway(default_plugins(), "highway"), reference(default_plugins(), "reference");
  std::vector<Type> in_types;
  std::vector<std::vector<uint8_t>> operands = given;
  std::mt19937 rng(7);
  int32_t rows = 1;
  for (const Atom& a : eqn.inputs) {
    const Type& type = program.type_of(a);
    in_types.push_back(type);
    if (!given.empty()) continue;
    if (type.dtype == DType::kI32) operands.push_back(index_operand(elements_of(type), rows, rng));
    else operands.push_back(half_operand(type.dtype, elements_of(type), rng, moves, small));
    if (!type.shape.empty()) rows = static_cast<int32_t>(type.shape[0]);
  }
  ASSERT_EQ(operands.size(), in_types.size());
  const Type out = program.vars[static_cast<size_t>(eqn.outputs.at(0))].type;
  const auto on_highway = highway.prepare(eqn.prim, params, in_types, {out}, "case");
  const auto on_reference = reference.prepare(eqn.prim, params, in_types, {out}, "case");
  ASSERT_NE(on_highway, nullptr) << "highway does not run it";
  ASSERT_NE(on_reference, nullptr);
  std::vector<const void*> inputs;
  for (const auto& o : operands) inputs.push_back(o.data());
  const size_t bytes = elements_of(out) * width(out.dtype);
  std::vector<uint8_t> got(bytes, 0xAB), expected(bytes, 0xCD);
  on_highway->execute_allocating_workspace(inputs, {got.data()});
  on_reference->execute_allocating_workspace(inputs, {expected.data()});
  size_t differ = 0;
  for (size_t i = 0; i < bytes; i += 2)
    if (std::memcmp(&got[i], &expected[i], 2) != 0 && ++differ <= 3)
      ADD_FAILURE() << "element " << i / 2 << ": highway " << std::hex << (got[i] | got[i + 1] << 8) << ", reference "
                    << (expected[i] | expected[i + 1] << 8) << (small ? " (small operands)" : "");
  EXPECT_EQ(differ, 0u);
}

TEST(HighwayHalfLayout, MovesGiveTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const char* cases[] = {
      "{ lambda ; a:T[3,1,5]. let b:T[2,3,4,5] = broadcast_in_dim[broadcast_dimensions=(1, 2, 3) shape=(2, 3, 4, 5)] a in (b,) }",
      "{ lambda ; a:T[]. let b:T[7,9] = broadcast_in_dim[broadcast_dimensions=() shape=(7, 9)] a in (b,) }",
      "{ lambda ; a:T[5,3]. let b:T[5,3,7] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(5, 3, 7)] a in (b,) }",
      "{ lambda ; a:T[5]. let b:T[3,5,2] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 5, 2)] a in (b,) }",
      "{ lambda ; a:T[3,5,7]. let b:T[7,3,5] = transpose[permutation=(2, 0, 1)] a in (b,) }",
      "{ lambda ; a:T[4,33,17]. let b:T[4,17,33] = transpose[permutation=(0, 2, 1)] a in (b,) }",
      "{ lambda ; a:T[2,3,4,5]. let b:T[2,4,3,5] = transpose[permutation=(0, 2, 1, 3)] a in (b,) }",
      "{ lambda ; a:T[3,5,7]. let b:T[3,5,7] = rev[dimensions=(0, 2)] a in (b,) }",
      "{ lambda ; a:T[3,5,7]. let b:T[3,5,7] = rev[dimensions=(1,)] a in (b,) }",
      "{ lambda ; a:T[9,11]. let b:T[4,3] = slice[limit_indices=(8, 11) start_indices=(1, 2) strides=(2, 3)] a in (b,) }",
      "{ lambda ; a:T[3,9,5]. let b:T[3,4,5] = slice[limit_indices=(3, 7, 5) start_indices=(0, 3, 0) strides=None] a in (b,) }",
      "{ lambda ; a:T[3,2,5] b:T[3,4,5] c:T[3,1,5]. let d:T[3,7,5] = concatenate[dimension=1] a b c in (d,) }",
      "{ lambda ; a:T[3,5] v:T[]. let b:T[3,10] = pad[padding_config=((0, 0, 0), (2, 3, 0))] a v in (b,) }",
      "{ lambda ; a:T[3,5] v:T[]. let b:T[5,14] = pad[padding_config=((1, -1, 1), (-2, 3, 2))] a v in (b,) }",
      "{ lambda ; a:T[6,5]. let b:T[3,2,5] = reshape[dimensions=None new_sizes=(3, 2, 5)] a in (b,) }",
      "{ lambda ; a:T[3,1,5]. let b:T[3,5] = squeeze[dimensions=(1,)] a in (b,) }",
      "{ lambda ; a:T[3,9,5]. let b:T[3,2,5] c:T[3,3,5] d:T[3,4,5] = split[axis=1 sizes=(2, 3, 4)] a in (c,) }",
      "{ lambda ; t:T[13,7] i:i32[4,5,1]. let g:T[4,5,7] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(2,), "
      "collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) "
      "fill_value=None mode=GatherScatterMode.FILL_OR_DROP slice_sizes=(1, 7)] t i in (g,) }",
      "{ lambda ; t:T[13,7] i:i32[4,5,1]. let g:T[4,5,7] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(2,), "
      "collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) "
      "fill_value=None mode=GatherScatterMode.CLIP slice_sizes=(1, 7)] t i in (g,) }",
  };
  for (DType t : kHalves) {
    for (const char* text : cases) expect_reference_bits(text, t, true);
  }
}

TEST(HighwayHalfLayout, IotaRoundsAsTheReference) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  // Past 256 (bf16) and 2048 (f16) the integers round.
  for (const auto& [t, name] : {std::pair{DType::kBF16, "bfloat16"}, std::pair{DType::kF16, "float16"}})
    expect_reference_bits("{ lambda ; a:T[1]. let b:T[3,2100] = iota[dimension=1 dtype=" + std::string(name) +
                              " shape=(3, 2100) sharding=None] in (b,) }",
                          t, true);
}

TEST(HighwayHalfLayout, ScatterAddSumsInDoubleAndRoundsOnce) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const char* text =
      "{ lambda ; t:T[13,7] i:i32[40,1] u:T[40,7]. let s:T[13,7] = scatter-add[dimension_numbers=ScatterDimensionNumbers("
      "update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), "
      "scatter_indices_batching_dims=()) mode=GatherScatterMode.FILL_OR_DROP] t i u in (s,) }";
  for (DType t : kHalves) {
    expect_reference_bits(text, t, false, true);
    expect_reference_bits(text, t, false, false);
    // Out-of-bounds rows clamped under CLIP, dropped under PROMISE_IN_BOUNDS as under FILL_OR_DROP.
    for (const char* mode : {"CLIP", "PROMISE_IN_BOUNDS"}) {
      std::string other = text;
      other.replace(other.find("FILL_OR_DROP"), 12, mode);
      expect_reference_bits(other, t, false, true);
    }
  }
}

TEST(HighwayHalfLayout, ReductionsGiveTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const char* cases[] = {
      "{ lambda ; a:T[7,13,3]. let b:T[13] = R[axes=(0, 2)] a in (b,) }",
      "{ lambda ; a:T[7,13,300]. let b:T[7,13] = R[axes=(2,)] a in (b,) }",
      "{ lambda ; a:T[300,37]. let b:T[37] = R[axes=(0,)] a in (b,) }",
      "{ lambda ; a:T[3,5,17]. let b:T[17] = R[axes=(1, 0)] a in (b,) }",
      "{ lambda ; a:T[5,6,7]. let b:T[] = R[axes=(0, 1, 2)] a in (b,) }",
      "{ lambda ; a:T[0,3]. let b:T[3] = R[axes=(0,)] a in (b,) }",
      "{ lambda ; a:T[3,0]. let b:T[3] = R[axes=(1,)] a in (b,) }",
      // Past the size where rows, or columns in blocks, are split over threads.
      "{ lambda ; a:T[601,301]. let b:T[601] = R[axes=(1,)] a in (b,) }",
      "{ lambda ; a:T[70,2053]. let b:T[2053] = R[axes=(0,)] a in (b,) }",
  };
  for (DType t : kHalves)
    for (const char* r : {"reduce_sum", "reduce_max", "reduce_min"})
      for (const char* text : cases) {
        std::string program = text;
        program.replace(program.find('R'), 1, r);
        expect_reference_bits(program, t, false, true);
        expect_reference_bits(program, t, false, false);
      }
}

// Bits of +-(1 + m / 2^fraction_bits) * 2^exponent in bf16 or f16, a normal value (m below
// 2^fraction_bits).
uint16_t half_of(DType t, bool negative, int exponent, uint32_t m) {
  const uint32_t sign = negative ? 0x8000u : 0u;
  if (t == DType::kBF16) return static_cast<uint16_t>(sign | static_cast<uint32_t>(exponent + 127) << 7 | (m & 0x7F));
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(exponent + 15) << 10 | (m & 0x3FF));
}

std::vector<uint8_t> bytes_of(const std::vector<uint16_t>& bits) {
  std::vector<uint8_t> bytes(2 * bits.size());
  std::memcpy(bytes.data(), bits.data(), bytes.size());
  return bytes;
}

// Long rows are summed in SIMD, in another order than the reference's, only where no partial sum
// can round or the rounding to the half dtype cannot tell the orders apart
// (half_row_reductions.hpp); elsewhere in order. Rows whose magnitudes spread over fewer and more
// bits than exact sums allow, a softmax's exponentials, a row where the order decides the sum
// (2^60 + 1 - 2^60 is 0 in order, 1 with the 1 added last), and extremes that are zeros of either
// sign, infinities, NaNs and subnormals: every row has the reference's bits.
TEST(HighwayHalfLayout, LongRowsSumInAnyOrderOnlyWhereItCannotShow) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  std::mt19937 rng(11);
  for (DType t : kHalves)
    for (size_t len : {64u, 127u, 2053u}) {
      const int top = t == DType::kBF16 ? 60 : 15, bottom = t == DType::kBF16 ? -60 : -14;
      std::vector<std::vector<uint16_t>> rows;
      for (int spread : {8, 20, 30, 36, 37, 38, 39, 44, 45, 46, 60, 120}) {
        std::vector<uint16_t> row(len);
        const int low = std::max(bottom, -spread / 2), high = std::min(top, low + spread);
        for (uint16_t& h : row)
          h = rng() % 9 == 0 ? 0 : half_of(t, rng() % 2, low + static_cast<int>(rng() % static_cast<uint32_t>(high - low + 1)), rng());
        rows.push_back(row);
      }
      std::vector<uint16_t> exponentials(len);  // a softmax's: positive, over more bits than exact sums allow
      for (uint16_t& h : exponentials) h = half_of(t, false, -static_cast<int>(rng() % static_cast<uint32_t>(-bottom)), rng());
      rows.push_back(exponentials);
      std::vector<uint16_t> cancel(len, 0);
      cancel[0] = half_of(t, false, top, 0), cancel[1] = half_of(t, false, 0, 0), cancel[len / 2] = half_of(t, true, top, 0);
      rows.push_back(cancel);
      // Zeros of both signs, the first one's sign the reference keeps; then negatives beside them.
      for (uint16_t first : {uint16_t{0}, uint16_t{0x8000}}) {
        std::vector<uint16_t> zeros(len, static_cast<uint16_t>(first ^ 0x8000));
        zeros[0] = first;
        rows.push_back(zeros);
        for (size_t i = 1; i < len; i += 2) zeros[i] = half_of(t, true, 1, 3);
        rows.push_back(zeros);
      }
      const uint16_t infinity = t == DType::kBF16 ? 0x7F80 : 0x7C00, nan = t == DType::kBF16 ? 0x7FC1 : 0x7E01;
      for (uint16_t special : {infinity, static_cast<uint16_t>(infinity | 0x8000), nan}) {
        std::vector<uint16_t> row = rows[0];
        row[len - 1 - rng() % len] = special;
        rows.push_back(row);
      }
      std::vector<uint16_t> subnormal(len);
      for (uint16_t& h : subnormal) h = static_cast<uint16_t>((rng() % 2 ? 0x8000 : 0) | (1 + rng() % 60));
      subnormal[5] = half_of(t, false, 2, 1);
      rows.push_back(subnormal);
      std::vector<uint16_t> all;
      for (const auto& row : rows) all.insert(all.end(), row.begin(), row.end());
      const std::string shape = std::to_string(rows.size()) + "," + std::to_string(len);
      for (const char* r : {"reduce_sum", "reduce_max", "reduce_min"})
        expect_reference_bits("{ lambda ; a:T[" + shape + "]. let b:T[" + std::to_string(rows.size()) + "] = " + r +
                                  "[axes=(1,)] a in (b,) }",
                              t, false, false, {bytes_of(all)});
    }
}

// Sums over leading axes add each column in the reference's order, however many columns a SIMD
// vector holds: 1 + 2^60 - 2^60 is 0 in that order and 1 backwards (bf16; f16's range is too
// narrow for a double to round, which the same case checks too).
TEST(HighwayHalfLayout, ColumnSumsKeepTheReferenceOrder) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  for (DType t : kHalves)
    for (size_t columns : {3u, 37u}) {
      const int top = t == DType::kBF16 ? 60 : 15;
      std::vector<uint16_t> bits;
      for (uint16_t row : {half_of(t, false, 0, 0), half_of(t, false, top, 0), half_of(t, true, top, 0)})
        bits.insert(bits.end(), columns, row);
      const std::string n = std::to_string(columns);
      expect_reference_bits("{ lambda ; a:T[3," + n + "]. let b:T[" + n + "] = reduce_sum[axes=(0,)] a in (b,) }", t, false,
                            false, {bytes_of(bits)});
    }
}

// Each half kind estimates its time (ABI 1.7 expected_ns, half_costs.hpp), more for more elements
// and more for an element-by-element move than for a copy of runs; f32 moves still give none.
TEST(HighwayHalfLayout, HalfKindsEstimateTheirTime) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  BackendInstance highway(default_plugins(), "highway");
  auto estimate = [&](const std::string& text) {
    const Program p = parse_program(text, "estimate");
    const Equation& e = p.eqns.at(0);
    std::vector<Type> in;
    for (const Atom& a : e.inputs) in.push_back(p.type_of(a));
    return highway.expected_ns(e.prim, e.params, in, {p.vars[static_cast<size_t>(e.outputs[0])].type});
  };
  const auto small = estimate("{ lambda ; a:bf16[64,256]. let b:bf16[256,64] = transpose[permutation=(1, 0)] a in (b,) }");
  const auto large = estimate("{ lambda ; a:bf16[512,256]. let b:bf16[256,512] = transpose[permutation=(1, 0)] a in (b,) }");
  const auto copy = estimate("{ lambda ; a:bf16[512,256]. let b:bf16[256,512] = reshape[dimensions=None new_sizes=(256, 512)] a in (b,) }");
  const auto sum = estimate("{ lambda ; a:f16[512,256]. let b:f16[512] = reduce_sum[axes=(1,)] a in (b,) }");
  ASSERT_TRUE(small && large && copy && sum);
  EXPECT_GT(*small, 0);
  EXPECT_GT(*large, *small);
  EXPECT_GT(*large, *copy);
  EXPECT_GT(*sum, *copy);
  EXPECT_FALSE(estimate("{ lambda ; a:f32[64,256]. let b:f32[256,64] = transpose[permutation=(1, 0)] a in (b,) }"));
}

}  // namespace
}  // namespace rematkit::testing
