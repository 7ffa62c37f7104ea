// Forward semantics of primitives against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/parser.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {


TEST(Interpreter, DotGeneralMatmul) {
  auto out = evaluate_f64("{ lambda ; a:f32[2,3] b:f32[3,2]. let c:f32[2,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b in (c,) }",
                 {tensor_of({2, 3}, {1, 2, 3, 4, 5, 6}), tensor_of({3, 2}, {7, 8, 9, 10, 11, 12})});
  EXPECT_EQ(out[0].data, (std::vector<double>{58, 64, 139, 154}));
}

TEST(Interpreter, DotGeneralBatchedWithTransposedContraction) {
  // out[b,i,j] = sum_k a[b,k,i] * c[b,j,k]
  auto out = evaluate_f64("{ lambda ; a:f32[2,2,1] c:f32[2,1,2]. let d:f32[2,1,1] = dot_general[dimension_numbers=(([1], [2]), ([0], [0]))] a c in (d,) }",
                 {tensor_of({2, 2, 1}, {1, 2, 3, 4}), tensor_of({2, 1, 2}, {5, 6, 7, 8})});
  EXPECT_EQ(out[0].data, (std::vector<double>{1 * 5 + 2 * 6, 3 * 7 + 4 * 8}));
}

TEST(Interpreter, BroadcastingBinaryAndReductions) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[2,3] b:f32[1,3]. let
      c:f32[2,3] = sub a b
      d:f32[2] = reduce_max[axes=(1,)] c
      e:f32[3] = reduce_sum[axes=(0,)] c
    in (d, e) })",
                 {tensor_of({2, 3}, {1, 5, 3, 4, 2, 9}), tensor_of({1, 3}, {1, 1, 1})});
  EXPECT_EQ(out[0].data, (std::vector<double>{4, 8}));
  EXPECT_EQ(out[1].data, (std::vector<double>{3, 5, 10}));
}

TEST(Interpreter, StructuralPrimitives) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[2,3]. let
      b:f32[3,2] = transpose[permutation=(1, 0)] a
      c:f32[6] = reshape[new_sizes=(6,) dimensions=None] b
      d:f32[2,2,3] = broadcast_in_dim[shape=(2, 2, 3) broadcast_dimensions=(1, 2)] a
      e:f32[2,3] = reduce_sum[axes=(0,)] d
    in (c, e) })",
                 {tensor_of({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(out[0].data, (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(out[1].data, (std::vector<double>{2, 4, 6, 8, 10, 12}));
}

TEST(Interpreter, SelectComparisonAndConvert) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[3] b:f32[3]. let
      p:bool[3] = gt a b
      c:f32[3] = select_n p a b
      i:i32[3] = convert_element_type[new_dtype=int32] c
    in (c, i) })",
                 {tensor_of({3}, {1, 5, -2.5}), tensor_of({3}, {2, 1, -3})});
  EXPECT_EQ(out[0].data, (std::vector<double>{1, 1, -3}));  // select_n picks b where p is true
  EXPECT_EQ(out[1].data, (std::vector<double>{1, 1, -3}));
}

TEST(Interpreter, SoftmaxAndUnaries) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[2]. let
      s:f32[2] = softmax[axis=-1] a
      r:f32[2] = relu a
      l:f32[2] = logistic a
      p:f32[2] = integer_pow[y=-2] a
    in (s, r, l, p) })",
                 {tensor_of({2}, {0.0, std::log(3.0)})});
  EXPECT_NEAR(out[0].data[0], 0.25, 1e-15);
  EXPECT_NEAR(out[0].data[1], 0.75, 1e-15);
  EXPECT_EQ(out[1].data, (std::vector<double>{0.0, std::log(3.0)}));
  EXPECT_NEAR(out[2].data[1], 0.75, 1e-15);  // 1 / (1 + 1/3)
  EXPECT_TRUE(std::isinf(out[3].data[0]));
}

TEST(Interpreter, Float32RoundsEveryResult) {
  const Program p = parse_program("{ lambda ; a:f32[]. let b:f32[] = div a 3.0 in (b,) }", "test");
  auto out = evaluate_program(p, {}, {Tensor::scalar(1.0)}, Arithmetic::kFloat32);
  EXPECT_EQ(out[0].data[0], static_cast<double>(1.0f / 3.0f));
}

}  // namespace
}  // namespace rematkit::testing
