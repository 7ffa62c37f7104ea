// Every dtype JAX prints for real models, stored as itself and computed as XLA:CPU computes it:
// f32 arithmetic rounded to nearest even on store for bf16 and f16, integers that wrap, floats
// converted to integers toward zero and saturating. Expected values are worked out by hand from
// the formats' definitions (IEEE 754 binary16, bfloat16 as the top half of binary32) and XLA's
// documented semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

using Values = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();

// In f32 arithmetic: every result rounded to its dtype, as the backends store it.
std::vector<Tensor> evaluate_f32(const std::string& text, std::vector<Tensor> args) {
  return evaluate_program(parse_program(text, "test"), {}, args, Arithmetic::kFloat32);
}

TEST(Dtypes, NamesSizesAndKinds) {
  for (DType d : kAllDTypes) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
    EXPECT_EQ(parse_dtype(dtype_numpy_name(d)), d);
  }
  EXPECT_EQ(dtype_numpy_name(DType::kBF16), "bfloat16");
  EXPECT_EQ(dtype_bytes(DType::kBF16), 2);
  EXPECT_EQ(dtype_bytes(DType::kF16), 2);
  EXPECT_EQ(dtype_bytes(DType::kF64), 8);
  EXPECT_EQ(dtype_bytes(DType::kI64), 8);
  EXPECT_EQ(dtype_bytes(DType::kU8), 1);
  EXPECT_EQ((Type{DType::kBF16, {3, 5}, MemorySpace::kDevice}.bytes()), 30);
  EXPECT_TRUE(is_floating(DType::kF16) && !is_floating(DType::kU32));
  EXPECT_TRUE(is_integer(DType::kU8) && !is_integer(DType::kBool));
}

TEST(Dtypes, Bfloat16RoundsToNearestEvenOnStore) {
  // Near 1 a bf16 step is 2^-7. 1 + 2^-8 is halfway: ties go to the even 1.0; 1 + 3 * 2^-9 is
  // nearer 1 + 2^-7.
  auto out = evaluate_f32("{ lambda ; a:bf16[2] b:bf16[2]. let c:bf16[2] = add a b in (c,) }",
                          {tensor_of({2}, {1.0, 1.0}, DType::kBF16), tensor_of({2}, {0.00390625, 0.005859375}, DType::kBF16)});
  EXPECT_EQ(out[0].data, (Values{1.0, 1.0078125}));
  // 1/3 in f32 is 0x3EAAAAAB; its dropped half 0xAAAB is past halfway, so bf16 0x3EAB.
  auto third = evaluate_f32("{ lambda ; a:f32[1]. let b:bf16[1] = convert_element_type[new_dtype=bfloat16 weak_type=False] a in (b,) }",
                            {tensor_of({1}, {1.0 / 3.0})});
  EXPECT_EQ(third[0].data, (Values{0.333984375}));
  // In f64 arithmetic (finite-difference checks) floating values stay exact.
  auto exact = evaluate_f64("{ lambda ; a:bf16[1] b:bf16[1]. let c:bf16[1] = add a b in (c,) }",
                            {tensor_of({1}, {1.0}, DType::kBF16), tensor_of({1}, {0.00390625}, DType::kBF16)});
  EXPECT_EQ(exact[0].data, (Values{1.00390625}));
}

TEST(Dtypes, Float16OverflowsAndUnderflowsGradually) {
  // 65504 is the largest half; 65520 is halfway to 65536 and rounds (to even) to infinity. The
  // smallest subnormal is 2^-24: 1e-8 is below half of it (0), 3e-8 above (2^-24). 1/3 is 0x3555.
  auto out = evaluate_f32("{ lambda ; a:f32[6]. let b:f16[6] = convert_element_type[new_dtype=float16] a in (b,) }",
                          {tensor_of({6}, {65504, 65520, 1e-8, 3e-8, 1.0 / 3.0, -70000})});
  EXPECT_EQ(out[0].data, (Values{65504, kInf, 0, std::ldexp(1.0, -24), 0.333251953125, -kInf}));
}

TEST(Dtypes, IntegersWrap) {
  auto out = evaluate_f32(R"({ lambda ; a:i32[1] b:u8[2] c:i8[1] d:u32[1] e:i64[1]. let
      f:i32[1] = add a 1:i32[]
      g:u8[2] = add b 10:u8[]
      h:i8[1] = add c c
      i:u32[1] = mul d d
      j:i64[1] = add e e
    in (f, g, h, i, j) })",
                          {tensor_of({1}, {2147483647}, DType::kI32), tensor_of({2}, {250, 3}, DType::kU8),
                           tensor_of({1}, {100}, DType::kI8), tensor_of({1}, {4294967295.0}, DType::kU32),
                           tensor_of({1}, {std::ldexp(1.0, 40)}, DType::kI64)});
  EXPECT_EQ(out[0].data, (Values{-2147483648.0}));
  EXPECT_EQ(out[1].data, (Values{4, 13}));
  EXPECT_EQ(out[2].data, (Values{-56}));
  EXPECT_EQ(out[3].data, (Values{1}));  // (2^32 - 1)^2 = 2^64 - 2^33 + 1, which is 1 mod 2^32
  EXPECT_EQ(out[4].data, (Values{std::ldexp(1.0, 41)}));
}

TEST(Dtypes, FloatToIntegerConversionSaturates) {
  auto out = evaluate_f32(R"({ lambda ; a:f32[5] n:i32[3]. let
      i:i32[5] = convert_element_type[new_dtype=int32 weak_type=False] a
      u:u8[5] = convert_element_type[new_dtype=uint8 weak_type=False] a
      w:u8[3] = convert_element_type[new_dtype=uint8 weak_type=False] n
    in (i, u, w) })",
                          {tensor_of({5}, {3e9, -3e9, NAN, -1.7, 2.9}), tensor_of({3}, {300, -1, 7}, DType::kI32)});
  EXPECT_EQ(out[0].data, (Values{2147483647, -2147483648.0, 0, -1, 2}));
  EXPECT_EQ(out[1].data, (Values{255, 0, 0, 0, 2}));
  EXPECT_EQ(out[2].data, (Values{44, 255, 7}));  // between integers the bits are kept: 300 mod 256
}

TEST(Dtypes, IntegerDivisionAndShiftsFollowXla) {
  // x / 0 is -1 (all ones: 2^32 - 1 in u32); INT32_MIN / -1 wraps to INT32_MIN.
  auto div = evaluate_f32("{ lambda ; a:i32[2] b:i32[2] c:u32[1] d:u32[1]. let e:i32[2] = div a b; f:u32[1] = div c d in (e, f) }",
                          {tensor_of({2}, {7, -2147483648.0}, DType::kI32), tensor_of({2}, {0, -1}, DType::kI32),
                           tensor_of({1}, {7}, DType::kU32), tensor_of({1}, {0}, DType::kU32)});
  EXPECT_EQ(div[0].data, (Values{-1, -2147483648.0}));
  EXPECT_EQ(div[1].data, (Values{4294967295.0}));
  // Shifts in the dtype's width: u32 0x80000000 >> 31 is 1; 0xFFFFFFFF << 4 is 0xFFFFFFF0; u8
  // 0x81 << 1 drops the top bit; a shift by the width or more gives 0.
  auto shifts = evaluate_f32(R"({ lambda ; a:u32[2] b:u32[2] c:u8[2] d:u8[2]. let
      e:u32[2] = shift_right_logical a b
      f:u32[2] = shift_left a b
      g:u8[2] = shift_left c d
      h:u32[2] = xor a b
    in (e, f, g, h) })",
                             {tensor_of({2}, {2147483648.0, 4294967295.0}, DType::kU32), tensor_of({2}, {31, 4}, DType::kU32),
                              tensor_of({2}, {129, 129}, DType::kU8), tensor_of({2}, {1, 8}, DType::kU8)});
  EXPECT_EQ(shifts[0].data, (Values{1, 268435455}));
  EXPECT_EQ(shifts[1].data, (Values{0, 4294967280.0}));
  EXPECT_EQ(shifts[2].data, (Values{2, 0}));
  EXPECT_EQ(shifts[3].data, (Values{2147483679.0, 4294967291.0}));
}

TEST(Dtypes, BitcastsBetweenTypesOfOneSize) {
  // f32 1.0 is 0x3F800000; f64 1.0 is 0x3FF0000000000000 = 4607182418800017408.
  auto out = evaluate_f32(R"({ lambda ; a:f32[1] b:f64[1]. let
      u:u32[1] = bitcast_convert_type[new_dtype=uint32] a
      i:i64[1] = bitcast_convert_type[new_dtype=int64] b
    in (u, i) })",
                          {tensor_of({1}, {1.0}), tensor_of({1}, {1.0}, DType::kF64)});
  EXPECT_EQ(out[0].data, (Values{1065353216}));
  EXPECT_EQ(out[1].data, (Values{4607182418800017408.0}));
}

TEST(Dtypes, Float64StaysExactInF32Arithmetic) {
  auto out = evaluate_f32("{ lambda ; a:f64[1]. let b:f64[1] = add a 1e-12:f64[] in (b,) }",
                          {tensor_of({1}, {1.0}, DType::kF64)});
  EXPECT_EQ(out[0].data, (Values{1.0 + 1e-12}));
}

TEST(Dtypes, PreferredElementTypeKeepsTheProductInF32) {
  // [1, 2^-8] . [1, 1]: 1 + 2^-8 is exact in f32 and a tie in bf16 (rounded to 1).
  const std::string f32_result =
      "{ lambda ; a:bf16[2] b:bf16[2]. let c:f32[] = dot_general[dimension_numbers=(([0], [0]), ([], [])) "
      "preferred_element_type=float32] a b in (c,) }";
  const std::string bf16_result =
      "{ lambda ; a:bf16[2] b:bf16[2]. let c:bf16[] = dot_general[dimension_numbers=(([0], [0]), ([], []))] a b in (c,) }";
  const std::vector<Tensor> args = {tensor_of({2}, {1.0, 0.00390625}, DType::kBF16), tensor_of({2}, {1.0, 1.0}, DType::kBF16)};
  EXPECT_EQ(evaluate_f32(f32_result, args)[0].data, (Values{1.00390625}));
  EXPECT_EQ(evaluate_f32(bf16_result, args)[0].data, (Values{1.0}));
}

TEST(Dtypes, ResidualBytesUseTheRealElementSize) {
  // sin keeps cos: 8 bf16 elements are 16 bytes, 8 f32 elements 32.
  const Linearization bf16 = linearize_with(parse_program("{ lambda ; x:bf16[8]. let y:bf16[8] = sin x in (y,) }", "b"));
  const Linearization f32 = linearize_with(parse_program("{ lambda ; x:f32[8]. let y:f32[8] = sin x in (y,) }", "f"));
  EXPECT_EQ(residual_bytes(bf16), 16);
  EXPECT_EQ(residual_bytes(f32), 32);
}

TEST(Dtypes, TheTransposeConvertsAPreferredCotangentBack) {
  // d/dx of sum(dot(x, w)) with bf16 x and an f32 product: the cotangent of x comes back as bf16
  // (lax.py, _dot_general_transpose_lhs), and equals sum over w's row.
  const Program p = parse_program(
      "{ lambda ; x:bf16[2] w:bf16[2,3]. let y:f32[3] = dot_general[dimension_numbers=(([0], [0]), ([], [])) "
      "preferred_element_type=float32] x w; z:f32[] = reduce_sum[axes=(0,)] y in (z,) }",
      "t");
  const GradientResult g = interpret_gradient(linearize_with(p), {},
                                        {tensor_of({2}, {1.0, 2.0}, DType::kBF16),
                                         tensor_of({2, 3}, {1, 2, 3, 4, 5, 6}, DType::kBF16)},
                                        Arithmetic::kFloat32);
  ASSERT_TRUE(g.gradients[0].has_value());
  EXPECT_EQ(g.gradients[0]->type.dtype, DType::kBF16);
  EXPECT_EQ(g.gradients[0]->data, (Values{6, 15}));
  EXPECT_EQ(g.gradients[1]->type.dtype, DType::kBF16);
  EXPECT_EQ(g.gradients[1]->data, (Values{1, 1, 1, 2, 2, 2}));
}

}  // namespace
}  // namespace rematkit::testing
