// Highway's loops on integer and bool lanes (backends/highway/integer_lanes.cpp): compares of i32
// and u32, conversions of bool and i32 to f32 and an iota's counts, over more elements than a vector
// holds (the SIMD loop and its tail), checked against the values worked out here from lax's
// definitions; and a one-hot chain fused on Highway gives the reference backend's bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "support/fused_runs.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

constexpr size_t kN = 37;  // two AVX-512 vectors of i32 and a tail; four AVX2 ones and a tail

// Operands with both signs, the ends of the range, equal pairs and u32 values past 2^31, whose
// order differs read as i32.
template <typename T>
std::vector<T> operand(bool second) {
  const std::vector<uint32_t> seeds{0u, 1u, 2u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, 4000000000u, 16777217u, 5u};
  std::vector<T> v(kN);
  for (size_t i = 0; i < kN; ++i) {
    const uint32_t bits = second ? seeds[(i * 5 + 3) % seeds.size()] : seeds[i % seeds.size()] + static_cast<uint32_t>(i / 9);
    v[i] = std::bit_cast<T>(bits);
  }
  return v;
}

template <typename T>
void expect_compares(const char* dtype) {
  const std::vector<T> a = operand<T>(false), b = operand<T>(true);
  const std::vector<std::pair<const char*, std::function<bool(T, T)>>> ops{
      {"gt", [](T x, T y) { return x > y; }},  {"ge", [](T x, T y) { return x >= y; }},
      {"lt", [](T x, T y) { return x < y; }},  {"le", [](T x, T y) { return x <= y; }},
      {"eq", [](T x, T y) { return x == y; }}, {"ne", [](T x, T y) { return x != y; }}};
  const std::string n = std::to_string(kN);
  for (const auto& [name, op] : ops) {
    for (bool scalar_b : {false, true}) {
      SCOPED_TRACE(std::string(dtype) + " " + name + (scalar_b ? " against a scalar" : ""));
      const std::string text = "{ lambda ; a:" + std::string(dtype) + "[" + n + "] b:" + dtype + (scalar_b ? "[]" : "[" + n + "]") +
                               ". let c:bool[" + n + "] = " + name + " a b in (c,) }";
      const auto kernel = first_equation_on_highway(text);
      ASSERT_NE(kernel, nullptr) << text;
      std::vector<uint8_t> got(kN + 1, 7);
      kernel->execute_allocating_workspace({a.data(), b.data()}, {got.data()});
      for (size_t i = 0; i < kN; ++i) EXPECT_EQ(got[i], op(a[i], b[scalar_b ? 0 : i]) ? 1 : 0) << i;
      EXPECT_EQ(got[kN], 7) << "written past the result";
    }
  }
}

TEST(HighwayIntegerLanes, ComparesOfI32AndU32InEveryOrder) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  expect_compares<int32_t>("i32");
  expect_compares<uint32_t>("u32");
}

TEST(HighwayIntegerLanes, BoolAndI32BecomeTheNearestFloat) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const std::string n = std::to_string(kN);
  std::vector<uint8_t> mask(kN);
  for (size_t i = 0; i < kN; ++i) mask[i] = (i * 7 + 1) % 3 == 0;
  auto from_mask = first_equation_on_highway("{ lambda ; m:bool[" + n + "]. let f:f32[" + n + "] = convert_element_type[new_dtype=float32 weak_type=False] m in (f,) }");
  ASSERT_NE(from_mask, nullptr);
  std::vector<float> got(kN + 1, 7.0f);
  from_mask->execute_allocating_workspace({mask.data()}, {got.data()});
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(got[i], mask[i] ? 1.0f : 0.0f) << i;
  EXPECT_EQ(got[kN], 7.0f);
  // 2^24 + 1 and its neighbours round to even; the ends of i32 to -2^31 and 2^31.
  const std::vector<int32_t> ints = operand<int32_t>(false);
  auto from_ints = first_equation_on_highway("{ lambda ; a:i32[" + n + "]. let f:f32[" + n + "] = convert_element_type[new_dtype=float32 weak_type=False] a in (f,) }");
  ASSERT_NE(from_ints, nullptr);
  from_ints->execute_allocating_workspace({ints.data()}, {got.data()});
  // A double holds every i32 exactly; its conversion to float rounds to nearest, ties to even.
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(got[i], static_cast<float>(static_cast<double>(ints[i]))) << ints[i];
  EXPECT_EQ(got[7], 16777216.0f);  // 2^24 + 1: a tie, to even
  EXPECT_EQ(got[3], 2147483648.0f);
}

// A loss's one-hot as Flax traces it: iota along the classes, eq against the labels, converted and
// multiplied into the log-probabilities, summed per row; and an f32 iota. Rows of 300 classes run a
// few to a segment, each count restarting inside it; rows of 2500 (a vocabulary's, shorter) run in
// segments of FusedElementwise::kSegment (1024), so counts start inside a row. Fused on Highway,
// the reference backend's bits.
TEST(HighwayIntegerLanes, AOneHotChainFusedGivesTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  for (const std::vector<double>& labels : {std::vector<double>{0, 299, 150, 7, -1, 300, 31, 32}, std::vector<double>{2499, 1024, 1500}}) {
    const size_t rows = labels.size(), classes = labels.size() == 8 ? 300 : 2500;
    std::string text = R"({ lambda ; x:f32[R,C] y:i32[R]. let
        i:i32[R,C] = iota[dimension=1 dtype=int32 shape=(R, C) sharding=None]
        l:i32[R,C] = broadcast_in_dim[shape=(R, C) broadcast_dimensions=(0,)] y
        e:bool[R,C] = eq i l
        h:f32[R,C] = convert_element_type[new_dtype=float32 weak_type=False] e
        p:f32[R,C] = mul h x
        s:f32[R] = reduce_sum[axes=(1,)] p
        c:f32[R,C] = iota[dimension=1 dtype=float32 shape=(R, C) sharding=None]
        d:f32[R,C] = mul c x
      in (s, h, d) })";
    for (size_t at; (at = text.find('R')) != std::string::npos;) text.replace(at, 1, std::to_string(rows));
    for (size_t at; (at = text.find('C')) != std::string::npos;) text.replace(at, 1, std::to_string(classes));
    SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(classes));
    const Program program = parse_program(text, "one_hot");
    RandomInputs in = random_inputs(program, 9, 0.3, 1.2, true);
    in.arguments[1].data = labels;  // both ends, past them, a vector's edge, a segment's edge
    std::vector<std::string> fused;
    run_fused(linearize_with(program), in, {"highway", "reference"}, fused);
    bool one_chain = false;
    for (const std::string& step : fused) one_chain |= step.find("iota") != std::string::npos && step.find("eq") != std::string::npos;
    EXPECT_TRUE(one_chain) << "the one-hot is not one fused chain";
    expect_fused_reference_bits(linearize_with(program), in);
  }
}

}  // namespace
}  // namespace rematkit::testing
