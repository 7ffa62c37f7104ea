// Forward semantics of the primitives JAX's real programs use beyond the core set, against values
// worked out by hand from lax's definitions (jax/_src/lax/lax.py, slicing.py, special.py) and
// XLA's documented semantics for the edge cases (clamped dynamic indices, shifts by the width or
// more, integer remainder by zero, reduce_precision's rounding, overflow and flushing).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/parser.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {


using Values = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(PrimitiveSemantics, SpecialFunctions) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[2]. let
      b:f32[2] = erf a
      c:f32[2] = erf_inv a
      d:f32[2] = tan a
      e:f32[2] = exp2 a
      f:f32[2] = expm1 a
      g:f32[2] = log1p a
    in (b, c, d, e, f, g) })",
                 {tensor_of({2}, {0.5, 0.0})});
  EXPECT_NEAR(out[0].data[0], 0.5204998778130465, 1e-15);  // erf(1/2)
  EXPECT_NEAR(out[1].data[0], 0.4769362762044699, 1e-15);  // erf_inv(1/2)
  EXPECT_EQ(out[1].data[1], 0.0);
  EXPECT_NEAR(out[2].data[0], 0.5463024898437905, 1e-15);  // tan(1/2)
  EXPECT_NEAR(out[3].data[0], std::numbers::sqrt2, 1e-15);
  EXPECT_NEAR(out[4].data[0], 0.6487212707001282, 1e-15);  // e^(1/2) - 1
  EXPECT_NEAR(out[5].data[0], 0.4054651081081644, 1e-15);  // ln(3/2)
  auto erfc = evaluate_f64("{ lambda ; a:f32[2]. let b:f32[2] = erfc a in (b,) }", {tensor_of({2}, {0.5, 0.0})});
  EXPECT_NEAR(erfc[0].data[0], 1 - 0.5204998778130465, 1e-15);  // 1 - erf(1/2)
  EXPECT_EQ(erfc[0].data[1], 1.0);
  auto edges = evaluate_f64("{ lambda ; a:f32[3]. let b:f32[3] = erf_inv a in (b,) }", {tensor_of({3}, {1.0, -1.0, 2.0})});
  EXPECT_EQ(edges[0].data[0], kInf);
  EXPECT_EQ(edges[0].data[1], -kInf);
  EXPECT_TRUE(std::isnan(edges[0].data[2]));
}

TEST(PrimitiveSemantics, RoundingAndSigns) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[5]. let
      b:f32[5] = round a
      c:f32[5] = round[rounding_method=1] a
      d:f32[5] = floor a
      e:f32[5] = ceil a
      f:f32[5] = sign a
      g:f32[5] = abs a
      h:bool[5] = is_finite a
    in (b, c, d, e, f, g, h) })",
                 {tensor_of({5}, {2.5, -2.5, 0.5, -1.5, kInf})});
  EXPECT_EQ(out[0].data, (Values{3, -3, 1, -2, kInf}));   // away from zero (lax.round's default)
  EXPECT_EQ(out[1].data, (Values{2, -2, 0, -2, kInf}));   // to nearest even (jnp.round)
  EXPECT_EQ(out[2].data, (Values{2, -3, 0, -2, kInf}));
  EXPECT_EQ(out[3].data, (Values{3, -2, 1, -1, kInf}));
  EXPECT_EQ(out[4].data, (Values{1, -1, 1, -1, 1}));
  EXPECT_EQ(out[5].data, (Values{2.5, 2.5, 0.5, 1.5, kInf}));
  EXPECT_EQ(out[6].data, (Values{1, 1, 1, 1, 0}));
  auto zero = evaluate_f64("{ lambda ; a:f32[]. let b:f32[] = sign a in (b,) }", {tensor_of({}, {-0.0})});
  EXPECT_TRUE(zero[0].data[0] == 0.0 && std::signbit(zero[0].data[0]));  // sign(-0.0) is -0.0
}

TEST(PrimitiveSemantics, BinaryFloatingOps) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[3] b:f32[3] n:i32[3]. let
      c:f32[3] = atan2 a b
      d:f32[3] = rem a b
      e:f32[3] = pow a b
      f:f32[3] = pow a n
      g:f32[3] = clamp 0.0:f32[] a 2.0:f32[]
      h:f32[3] = add_any a b
    in (c, d, e, f, g, h) })",
                 {tensor_of({3}, {1.0, -5.5, 4.0}), tensor_of({3}, {-1.0, 2.0, 0.5}), tensor_of({3}, {3, 2, -1}, DType::kI32)});
  EXPECT_NEAR(out[0].data[0], 3 * std::numbers::pi / 4, 1e-15);
  EXPECT_EQ(out[1].data, (Values{0.0, -1.5, 0.0}));  // the dividend's sign, as C's fmod
  EXPECT_EQ(out[2].data, (Values{1.0, 30.25, 2.0}));
  EXPECT_EQ(out[3].data, (Values{1.0, 30.25, 0.25}));
  EXPECT_EQ(out[4].data, (Values{1.0, 0.0, 2.0}));
  EXPECT_EQ(out[5].data, (Values{0.0, -3.5, 4.5}));
}

TEST(PrimitiveSemantics, IntegerAndBitwiseOps) {
  auto out = evaluate_f64(R"({ lambda ; a:i32[4] b:i32[4]. let
      c:i32[4] = and a b
      d:i32[4] = or a b
      e:i32[4] = xor a b
      f:i32[4] = not a
      g:i32[4] = rem a b
      h:i32[4] = shift_left a b
      i:i32[4] = shift_right_logical a b
      j:i32[4] = shift_right_arithmetic a b
    in (c, d, e, f, g, h, i, j) })",
                 {tensor_of({4}, {12, -7, 1, -8}, DType::kI32), tensor_of({4}, {10, 2, 31, 40}, DType::kI32)});
  EXPECT_EQ(out[0].data, (Values{8, 0, 1, 40}));  // -7 is ...11111001, -8 ...11111000; 40 is 101000
  EXPECT_EQ(out[1].data, (Values{14, -5, 31, -8}));
  EXPECT_EQ(out[2].data, (Values{6, -5, 30, -48}));
  EXPECT_EQ(out[3].data, (Values{-13, 6, -2, 7}));
  EXPECT_EQ(out[4].data, (Values{2, -1, 1, -8}));
  // shift_left 1 << 31 is INT32_MIN; by 40 (>= the width) XLA gives 0, or the sign for >> arithmetic.
  EXPECT_EQ(out[5].data, (Values{12 << 10, -28, -2147483648.0, 0}));
  EXPECT_EQ(out[6].data, (Values{0, 1073741822, 0, 0}));
  EXPECT_EQ(out[7].data, (Values{0, -2, 0, -1}));
  auto by_zero = evaluate_f64("{ lambda ; a:i32[2] b:i32[2]. let c:i32[2] = rem a b in (c,) }",
                     {tensor_of({2}, {7, -7}, DType::kI32), tensor_of({2}, {0, 0}, DType::kI32)});
  EXPECT_EQ(by_zero[0].data, (Values{7, -7}));  // XLA: x rem 0 is x
  auto bools = evaluate_f64("{ lambda ; p:bool[4] q:bool[4]. let a:bool[4] = and p q; o:bool[4] = or p q; x:bool[4] = xor p q; "
                   "n:bool[4] = not p in (a, o, x, n) }",
                   {tensor_of({4}, {0, 0, 1, 1}, DType::kBool), tensor_of({4}, {0, 1, 0, 1}, DType::kBool)});
  EXPECT_EQ(bools[0].data, (Values{0, 0, 0, 1}));
  EXPECT_EQ(bools[1].data, (Values{0, 1, 1, 1}));
  EXPECT_EQ(bools[2].data, (Values{0, 1, 1, 0}));
  EXPECT_EQ(bools[3].data, (Values{1, 1, 0, 0}));
}

TEST(PrimitiveSemantics, SortOrdersByItsKeysStablyWithNaNLast) {
  // NaN after everything, -0 equal to 0 (so it keeps its place), ties in input order.
  auto out = evaluate_f64(R"({ lambda ; a:f32[6] p:i32[6]. let
      b:f32[6] = sort[dimension=0 is_stable=True num_keys=1] a
      c:f32[6] d:i32[6] = sort[dimension=0 is_stable=True num_keys=1] a p
    in (b, c, d) })",
                          {tensor_of({6}, {3, NAN, -0.0, 0.0, -kInf, 3}), tensor_of({6}, {0, 1, 2, 3, 4, 5}, DType::kI32)});
  EXPECT_EQ(out[0].data[0], -kInf);
  EXPECT_TRUE(std::signbit(out[0].data[1]) && out[0].data[1] == 0);  // -0.0 first of the two zeros
  EXPECT_EQ(out[0].data[3], 3);
  EXPECT_TRUE(std::isnan(out[0].data[5]));
  EXPECT_EQ(out[2].data, (Values{4, 2, 3, 0, 5, 1}));
  // Two keys: by the first, then the second; rows of a matrix along dimension 1.
  auto keys = evaluate_f64("{ lambda ; a:i32[2,3] b:i32[2,3]. let c:i32[2,3] d:i32[2,3] = sort[dimension=1 is_stable=True "
                           "num_keys=2] a b in (c, d) }",
                           {tensor_of({2, 3}, {1, 0, 1, 2, 2, 2}, DType::kI32), tensor_of({2, 3}, {9, 8, 7, 3, 1, 2}, DType::kI32)});
  EXPECT_EQ(keys[0].data, (Values{0, 1, 1, 2, 2, 2}));
  EXPECT_EQ(keys[1].data, (Values{8, 7, 9, 1, 2, 3}));
}

TEST(PrimitiveSemantics, CumulativeReductionsRunAlongTheirAxis) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[3] b:f32[3] z:f32[2]. let
      p:f32[3] = cumprod[axis=0 reverse=False] a
      q:f32[3] = cumprod[axis=0 reverse=True] a
      m:f32[3] = cummax[axis=0 reverse=False] b
      n:f32[3] = cummin[axis=0 reverse=False] b
      l:f32[2] = cumlogsumexp[axis=0 reverse=False] z
    in (p, q, m, n, l) })",
                          {tensor_of({3}, {1, 2, 3}), tensor_of({3}, {2, 3, 1}), tensor_of({2}, {0, 0})});
  EXPECT_EQ(out[0].data, (Values{1, 2, 6}));
  EXPECT_EQ(out[1].data, (Values{6, 6, 3}));
  EXPECT_EQ(out[2].data, (Values{2, 3, 3}));
  EXPECT_EQ(out[3].data, (Values{2, 2, 1}));
  EXPECT_EQ(out[4].data[0], 0);
  EXPECT_NEAR(out[4].data[1], std::log(2.0), 1e-15);  // log(e^0 + e^0)
}

TEST(PrimitiveSemantics, SplitCutsAlongItsAxisInOrder) {
  // lax.split(x, sizes=(1, 2), axis=1) of [[0, 1, 2], [3, 4, 5]]: columns 0 and 1-2.
  auto out = evaluate_f64("{ lambda ; a:f32[2,3]. let b:f32[2,1] c:f32[2,2] = split[axis=1 sizes=(1, 2)] a in (b, c) }",
                          {tensor_of({2, 3}, {0, 1, 2, 3, 4, 5})});
  EXPECT_EQ(out[0].data, (Values{0, 3}));
  EXPECT_EQ(out[1].data, (Values{1, 2, 4, 5}));
}

TEST(PrimitiveSemantics, BitcastReadsTheSameBitsAndBarriersPassValuesOn) {
  // 1.0f is 0x3F800000 = 1065353216; -0.0f is the sign bit alone, INT32_MIN.
  auto out = evaluate_f64(R"({ lambda ; a:f32[3] n:i32[2]. let
      i:i32[3] = bitcast_convert_type[new_dtype=int32] a
      f:f32[2] = bitcast_convert_type[new_dtype=float32] n
      b:f32[3] c:i32[2] = optimization_barrier a n
    in (i, f, b, c) })",
                          {tensor_of({3}, {1.0, -0.0, 2.0}), tensor_of({2}, {1065353216, 1077936128}, DType::kI32)});
  EXPECT_EQ(out[0].data, (Values{1065353216, -2147483648.0, 1073741824}));
  EXPECT_EQ(out[1].data, (Values{1.0, 3.0}));
  EXPECT_EQ(out[2].data, (Values{1.0, -0.0, 2.0}));
  EXPECT_EQ(out[3].data, (Values{1065353216, 1077936128}));
}

TEST(PrimitiveSemantics, ReductionsArgExtremesAndCumsum) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[2,4]. let
      b:f32[2] = reduce_min[axes=(1,)] a
      c:i32[2] = argmax[axes=(1,) index_dtype=int32] a
      d:i32[2] = argmin[axes=(1,) index_dtype=int32] a
      e:i32[4] = argmax[axes=(0,) index_dtype=int32] a
      f:f32[2,4] = cumsum[axis=1 reverse=False] a
      g:f32[2,4] = cumsum[axis=1 reverse=True] a
    in (b, c, d, e, f, g) })",
                 {tensor_of({2, 4}, {1, 3, 3, -2, 4, NAN, 0, 0})});
  EXPECT_EQ(out[0].data[0], -2);
  EXPECT_TRUE(std::isnan(out[0].data[1]));      // a NaN propagates
  EXPECT_EQ(out[1].data, (Values{1, 1}));       // the first of equal maxima; a NaN is the max
  EXPECT_EQ(out[2].data, (Values{3, 1}));       // ... and the min
  EXPECT_EQ(out[3].data, (Values{1, 1, 0, 1})); // ties along axis 0 go to the first row
  EXPECT_EQ((Values{out[4].data.begin(), out[4].data.begin() + 4}), (Values{1, 4, 7, 5}));
  EXPECT_EQ((Values{out[5].data.begin(), out[5].data.begin() + 4}), (Values{5, 4, 1, -2}));
  auto empty = evaluate_f64("{ lambda ; a:f32[0,2] n:i32[0]. let b:f32[2] = reduce_min[axes=(0,)] a; "
                   "m:i32[] = reduce_min[axes=(0,)] n in (b, m) }",
                   {tensor_of({0, 2}, {}), tensor_of({0}, {}, DType::kI32)});
  EXPECT_EQ(empty[0].data, (Values{kInf, kInf}));
  EXPECT_EQ(empty[1].data, (Values{2147483647.0}));
}

TEST(PrimitiveSemantics, IotaConcatenateSliceRev) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[2,2] b:f32[2,1] c:f32[3,4]. let
      i:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3) sharding=None]
      j:f32[3,2] = iota[dimension=0 dtype=float32 shape=(3, 2) sharding=None]
      d:f32[2,3] = concatenate[dimension=1] a b
      e:f32[2,3] = slice[limit_indices=(3, 4) start_indices=(1, 1) strides=None] c
      f:f32[1,2] = slice[limit_indices=(1, 4) start_indices=(0, 0) strides=(1, 3)] c
      g:f32[3,4] = rev[dimensions=(1,)] c
    in (i, j, d, e, f, g) })",
                 {tensor_of({2, 2}, {1, 2, 3, 4}), tensor_of({2, 1}, {5, 6}),
                  tensor_of({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})});
  EXPECT_EQ(out[0].data, (Values{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(out[1].data, (Values{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(out[2].data, (Values{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(out[3].data, (Values{5, 6, 7, 9, 10, 11}));
  EXPECT_EQ(out[4].data, (Values{0, 3}));
  EXPECT_EQ(out[5].data, (Values{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}));
}

TEST(PrimitiveSemantics, DynamicIndicesClampIntoBounds) {
  // XLA clamps each start index to [0, size - window]: 4 becomes 2 for a window of 3, -1 becomes 0.
  auto out = evaluate_f64(R"({ lambda ; a:f32[5] u:f32[2] i:i32[] k:i32[]. let
      b:f32[3] = dynamic_slice[slice_sizes=(3,)] a i
      c:f32[3] = dynamic_slice[slice_sizes=(3,)] a k
      d:f32[5] = dynamic_update_slice a u i
      e:f32[5] = dynamic_update_slice a u 1:i32[]
    in (b, c, d, e) })",
                 {tensor_of({5}, {0, 1, 2, 3, 4}), tensor_of({2}, {9, 8}), tensor_of({}, {4}, DType::kI32),
                  tensor_of({}, {-1}, DType::kI32)});
  EXPECT_EQ(out[0].data, (Values{2, 3, 4}));
  EXPECT_EQ(out[1].data, (Values{0, 1, 2}));
  EXPECT_EQ(out[2].data, (Values{0, 1, 2, 9, 8}));
  EXPECT_EQ(out[3].data, (Values{0, 9, 8, 3, 4}));
}

TEST(PrimitiveSemantics, PadDilatesAndCrops) {
  auto out = evaluate_f64(R"({ lambda ; a:f32[3] v:f32[]. let
      b:f32[8] = pad[padding_config=((1, 2, 1),)] a v
      c:f32[2] = pad[padding_config=((-1, 0, 0),)] a v
      d:f32[2] = pad[padding_config=((-2, -1, 1),)] a v
      e:f32[3] = copy a
    in (b, c, d, e) })",
                 {tensor_of({3}, {1, 2, 3}), tensor_of({}, {-1})});
  EXPECT_EQ(out[0].data, (Values{-1, 1, -1, 2, -1, 3, -1, -1}));
  EXPECT_EQ(out[1].data, (Values{2, 3}));
  EXPECT_EQ(out[2].data, (Values{2, -1}));  // 1 v 2 v 3 without its first two and last one
  EXPECT_EQ(out[3].data, (Values{1, 2, 3}));
}

TEST(PrimitiveSemantics, ReducePrecisionRoundsOverflowsAndFlushes) {
  // bfloat16 (8 exponent bits, 7 mantissa bits): ulp 2^-7 at 1; ties go to the even mantissa.
  // float16 (5, 10): largest finite 65504 (ulp 32 there); smallest normal 2^-14, below it zero.
  auto out = evaluate_f64(R"({ lambda ; a:f32[4] h:f32[6]. let
      b:f32[4] = reduce_precision[exponent_bits=8 mantissa_bits=7] a
      c:f32[6] = reduce_precision[exponent_bits=5 mantissa_bits=10] h
    in (b, c) })",
                 {tensor_of({4}, {1.0 + 1.0 / 256, 1.0 + 3.0 / 256, 1.0 + 1.0 / 128 + 1.0 / 1024, NAN}),
                  tensor_of({6}, {65519, 65520, 70000, 1e-5, -1e-5, 0.1})});
  EXPECT_EQ(out[0].data[0], 1.0);
  EXPECT_EQ(out[0].data[1], 1.0 + 4.0 / 256);
  EXPECT_EQ(out[0].data[2], 1.0 + 1.0 / 128);
  EXPECT_TRUE(std::isnan(out[0].data[3]));
  EXPECT_EQ(out[1].data[0], 65504);
  EXPECT_EQ(out[1].data[1], kInf);
  EXPECT_EQ(out[1].data[2], kInf);
  EXPECT_EQ(out[1].data[3], 0.0);
  EXPECT_TRUE(out[1].data[4] == 0.0 && std::signbit(out[1].data[4]));
  EXPECT_EQ(out[1].data[5], 0.0999755859375);  // 0.1 in float16: 1638/16384
}

// embedding[ids] as jnp prints it: ids normalised, given a trailing index-vector dim, gathered.
const char* kEmbedding = R"({ lambda ; a:f32[3,2] b:i32[3]. let
    c:bool[3] = lt b 0:i32[]
    d:i32[3] = add b 3:i32[]
    e:i32[3] = select_n c b d
    f:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(3, 1) sharding=None] e
    g:f32[3,2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None indices_are_sorted=False mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(1, 2) unique_indices=False] a f
  in (g,) })";

TEST(PrimitiveSemantics, GatherAsEmbeddingsColumnsAndPoints) {
  const Tensor table = tensor_of({3, 2}, {1, 2, 3, 4, 5, 6});
  // Rows 2, 0 and 2; -1 counts from the end, as numpy's.
  EXPECT_EQ(evaluate_f64(kEmbedding, {table, tensor_of({3}, {2, 0, -1}, DType::kI32)})[0].data, (Values{5, 6, 1, 2, 5, 6}));
  // x[:, idx]: the window is a column (slice (2, 1), offset dim 0), the index batch goes last.
  auto columns = evaluate_f64(R"({ lambda ; x:f32[2,3] i:i32[2,1]. let y:f32[2,2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(2, 1)] x i in (y,) })",
                     {tensor_of({2, 3}, {1, 2, 3, 4, 5, 6}), tensor_of({2, 1}, {2, 0}, DType::kI32)});
  EXPECT_EQ(columns[0].data, (Values{3, 1, 6, 4}));
  // x[r, c] for index pairs: both dims collapsed, no window dims.
  auto points = evaluate_f64(R"({ lambda ; x:f32[3,4] i:i32[2,2]. let y:f32[2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(1, 1)] x i in (y,) })",
                    {tensor_of({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), tensor_of({2, 2}, {1, 2, 0, 3}, DType::kI32)});
  EXPECT_EQ(points[0].data, (Values{6, 3}));
}

TEST(PrimitiveSemantics, GatherOutOfBoundsClampsOrFills) {
  const std::string gather = "{ lambda ; a:f32[3,2] i:i32[3,1]. let g:f32[3,2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) ";
  const Tensor table = tensor_of({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor ids = tensor_of({3, 1}, {1, 5, -1}, DType::kI32);
  auto clamped = evaluate_f64(gather + "fill_value=None mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(1, 2)] a i in (g,) }", {table, ids});
  EXPECT_EQ(clamped[0].data, (Values{3, 4, 5, 6, 1, 2}));  // 5 -> 2, -1 -> 0
  auto filled = evaluate_f64(gather + "fill_value=None mode=GatherScatterMode.FILL_OR_DROP slice_sizes=(1, 2)] a i in (g,) }", {table, ids});
  EXPECT_EQ((Values{filled[0].data[0], filled[0].data[1]}), (Values{3, 4}));
  for (int k = 2; k < 6; ++k) EXPECT_TRUE(std::isnan(filled[0].data[k])) << k;  // jnp.take's NaN for floats
  auto zeros = evaluate_f64(gather + "fill_value=0 mode=GatherScatterMode.FILL_OR_DROP slice_sizes=(1, 2)] a i in (g,) }", {table, ids});
  EXPECT_EQ(zeros[0].data, (Values{3, 4, 0, 0, 0, 0}));
  // wrap_negative_indices (JAX pull request 30205): -1 is the last row before clamping.
  auto wrapped = evaluate_f64(gather + "fill_value=None mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(1, 2) "
                              "wrap_negative_indices=True] a i in (g,) }", {table, ids});
  EXPECT_EQ(wrapped[0].data, (Values{3, 4, 5, 6, 5, 6}));
}

TEST(PrimitiveSemantics, ScatterAddAccumulatesRepeatsAndDropsOrClipsOutOfBounds) {
  const std::string scatter = "{ lambda ; x:f32[3,2] i:i32[3,1] u:f32[3,2]. let s:f32[3,2] = scatter-add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) ";
  const Tensor x = tensor_of({3, 2}, {0, 0, 0, 0, 10, 10});
  const Tensor updates = tensor_of({3, 2}, {1, 1, 2, 2, 3, 3});
  auto repeated = evaluate_f64(scatter + "mode=GatherScatterMode.FILL_OR_DROP] x i u in (s,) }", {x, tensor_of({3, 1}, {0, 2, 0}, DType::kI32), updates});
  EXPECT_EQ(repeated[0].data, (Values{4, 4, 0, 0, 12, 12}));
  const Tensor outside = tensor_of({3, 1}, {0, 3, -1}, DType::kI32);
  EXPECT_EQ(evaluate_f64(scatter + "mode=GatherScatterMode.FILL_OR_DROP] x i u in (s,) }", {x, outside, updates})[0].data,
            (Values{1, 1, 0, 0, 10, 10}));  // 3 and -1 dropped
  EXPECT_EQ(evaluate_f64(scatter + "mode=GatherScatterMode.PROMISE_IN_BOUNDS] x i u in (s,) }", {x, outside, updates})[0].data,
            (Values{1, 1, 0, 0, 10, 10}));  // XLA drops them too
  EXPECT_EQ(evaluate_f64(scatter + "mode=GatherScatterMode.CLIP] x i u in (s,) }", {x, outside, updates})[0].data,
            (Values{4, 4, 0, 0, 12, 12}));  // 3 -> 2, -1 -> 0
}

}  // namespace
}  // namespace rematkit::testing
