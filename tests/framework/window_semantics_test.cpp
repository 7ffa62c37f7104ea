// conv_general_dilated and the window reductions on small inputs whose results are worked out by
// hand from XLA's operation semantics (Conv, ReduceWindow, SelectAndScatter) and the grouping
// JAX's batching rule spells out (_conv_general_dilated_batch_rule: groups are contiguous, group
// major), so the reference kernels are checked against arithmetic, not against themselves.
#include <gtest/gtest.h>

#include <string>

#include "rematkit/autodiff/gradient.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

using Values = std::vector<double>;

// A one-equation program: conv_general_dilated of a and w into c:OUT, with these params.
std::string conv(const std::string& a, const std::string& w, const std::string& out, const std::string& spec,
                 const std::string& params) {
  return "{ lambda ; a:f32" + a + " w:f32" + w + ". let c:f32" + out +
         " = conv_general_dilated[dimension_numbers=ConvDimensionNumbers(" + spec + ") precision=None "
         "preferred_element_type=None " + params + "] a w in (c,) }";
}

const char* kNhwc = "lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)";
const char* kNcw = "lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2)";

TEST(WindowSemantics, Conv2dNhwcHwio) {
  // x = [[1 2 3] [4 5 6] [7 8 9]], kernel [[1 2] [3 4]]: each output is x[i,j] + 2 x[i,j+1] +
  // 3 x[i+1,j] + 4 x[i+1,j+1].
  const Tensor x = tensor_of({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = tensor_of({2, 2, 1, 1}, {1, 2, 3, 4});
  const std::string one_group = "batch_group_count=1 feature_group_count=1 lhs_dilation=(1, 1) rhs_dilation=(1, 1) ";
  auto valid = evaluate_f64(conv("[1,3,3,1]", "[2,2,1,1]", "[1,2,2,1]", kNhwc,
                                 one_group + "padding=((0, 0), (0, 0)) window_strides=(1, 1)"), {x, w});
  EXPECT_EQ(valid[0].data, (Values{37, 47, 67, 77}));  // 1+4+12+20, 2+6+15+24, 4+10+21+32, 5+12+24+36
  // Padded by a ring of zeros and strided by 2: the windows' top-left corners are padded (0,0),
  // (0,2), (2,0), (2,2), i.e. x[-1,-1], x[-1,1], x[1,-1], x[1,1].
  auto strided = evaluate_f64(conv("[1,3,3,1]", "[2,2,1,1]", "[1,2,2,1]", kNhwc,
                                   one_group + "padding=((1, 1), (1, 1)) window_strides=(2, 2)"), {x, w});
  EXPECT_EQ(strided[0].data, (Values{4, 18, 36, 77}));  // 4*1, 3*2+4*3, 2*4+4*7, 5+2*6+3*8+4*9
}

TEST(WindowSemantics, ConvDilationsAndNegativePadding) {
  const std::string plain = "batch_group_count=1 feature_group_count=1 window_strides=(1,) ";
  const Tensor ones = tensor_of({1, 1, 2}, {1, 1});
  // lhs_dilation 2 reads [1 2 3] as [1 0 2 0 3]; a kernel [1 1] adds neighbours.
  EXPECT_EQ(evaluate_f64(conv("[1,1,3]", "[1,1,2]", "[1,1,4]", kNcw, plain + "lhs_dilation=(2,) padding=((0, 0),) rhs_dilation=(1,)"),
                         {tensor_of({1, 1, 3}, {1, 2, 3}), ones})[0].data,
            (Values{1, 2, 2, 3}));
  // rhs_dilation 2 spreads the kernel over three elements: x[i] + x[i+2].
  EXPECT_EQ(evaluate_f64(conv("[1,1,4]", "[1,1,2]", "[1,1,2]", kNcw, plain + "lhs_dilation=(1,) padding=((0, 0),) rhs_dilation=(2,)"),
                         {tensor_of({1, 1, 4}, {1, 2, 3, 4}), ones})[0].data,
            (Values{4, 6}));
  // Padding of -1 on both sides cuts an element off each end.
  EXPECT_EQ(evaluate_f64(conv("[1,1,4]", "[1,1,1]", "[1,1,2]", kNcw, plain + "lhs_dilation=(1,) padding=((-1, -1),) rhs_dilation=(1,)"),
                         {tensor_of({1, 1, 4}, {1, 2, 3, 4}), tensor_of({1, 1, 1}, {1})})[0].data,
            (Values{2, 3}));
}

TEST(WindowSemantics, ConvFeatureAndBatchGroups) {
  const std::string one = "lhs_dilation=(1,) padding=((0, 0),) rhs_dilation=(1,) window_strides=(1,) ";
  const Tensor w = tensor_of({2, 1, 1}, {10, 100});
  // Two feature groups (depthwise): output feature 0 reads input feature 0, times 10; feature 1
  // reads feature 1, times 100.
  EXPECT_EQ(evaluate_f64(conv("[1,2,2]", "[2,1,1]", "[1,2,2]", kNcw, one + "batch_group_count=1 feature_group_count=2"),
                         {tensor_of({1, 2, 2}, {1, 2, 3, 4}), w})[0].data,
            (Values{10, 20, 300, 400}));
  // Two batch groups of a batch of 4: output feature o reads batch entries 2o and 2o + 1 (its
  // group), which become the output's batch 0 and 1. out[n, o] = x[n + 2o] * w[o], laid out
  // [n][o]: x0*10, x2*100, x1*10, x3*100.
  EXPECT_EQ(evaluate_f64(conv("[4,1,1]", "[2,1,1]", "[2,2,1]", kNcw, one + "batch_group_count=2 feature_group_count=1"),
                         {tensor_of({4, 1, 1}, {1, 2, 3, 4}), w})[0].data,
            (Values{10, 300, 20, 400}));
}

TEST(WindowSemantics, ReduceWindowPoolsDilationsAndPadding) {
  const Tensor x = tensor_of({6}, {1, 5, 2, 4, 3, 0});
  auto pools = evaluate_f64(R"({ lambda ; x:f32[6]. let
      m:f32[3] = reduce_window_max[base_dilation=(1,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(2,) window_strides=(2,)] x
      p:f32[3] = reduce_window_max[base_dilation=(1,) padding=((1, 0),) window_dilation=(1,) window_dimensions=(2,) window_strides=(2,)] x
      n:f32[5] = reduce_window_min[base_dilation=(1,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(2,) window_strides=(1,)] x
      s:f32[3] = reduce_window_sum[base_dilation=(1,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(2,) window_strides=(2,)] x
    in (m, p, n, s) })", {x});
  EXPECT_EQ(pools[0].data, (Values{5, 4, 3}));
  EXPECT_EQ(pools[1].data, (Values{1, 5, 4}));  // windows [pad 1] [5 2] [4 3]; the last 0 is left over
  EXPECT_EQ(pools[2].data, (Values{1, 2, 2, 3, 0}));
  EXPECT_EQ(pools[3].data, (Values{6, 6, 3}));
  auto dilated = evaluate_f64(R"({ lambda ; x:f32[3] y:f32[4]. let
      b:f32[4] = reduce_window_sum[base_dilation=(2,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(2,) window_strides=(1,)] x
      w:f32[2] = reduce_window_sum[base_dilation=(1,) padding=((0, 0),) window_dilation=(2,) window_dimensions=(2,) window_strides=(1,)] y
    in (b, w) })", {tensor_of({3}, {1, 2, 3}), tensor_of({4}, {1, 2, 3, 4})});
  EXPECT_EQ(dilated[0].data, (Values{1, 2, 2, 3}));  // over [1 0 2 0 3]
  EXPECT_EQ(dilated[1].data, (Values{4, 6}));        // y[i] + y[i+2]
}

TEST(WindowSemantics, SelectAndGatherAndScatterFollowTheWindowsChoice) {
  const Tensor x = tensor_of({6}, {1, 5, 2, 4, 3, 0});
  auto out = evaluate_f64(R"({ lambda ; t:f32[6] x:f32[6] s:f32[3]. let
      g:f32[3] = select_and_gather_add[base_dilation=(1,) padding=((0, 0),) select_prim=ge window_dilation=(1,) window_dimensions=(2,) window_strides=(2,)] t x
      l:f32[3] = select_and_gather_add[base_dilation=(1,) padding=((0, 0),) select_prim=le window_dilation=(1,) window_dimensions=(2,) window_strides=(2,)] t x
      u:f32[6] = select_and_scatter_add[padding=((0, 0),) select_prim=ge window_dimensions=(2,) window_strides=(2,)] s x
      v:f32[6] = select_and_scatter_add[padding=((0, 0),) select_prim=le window_dimensions=(2,) window_strides=(2,)] s x
    in (g, l, u, v) })", {tensor_of({6}, {1, 2, 3, 4, 5, 6}), x, tensor_of({3}, {10, 20, 30})});
  EXPECT_EQ(out[0].data, (Values{2, 4, 5}));  // the tangents where [1 5] [2 4] [3 0] have their max
  EXPECT_EQ(out[1].data, (Values{1, 3, 6}));  // and their min
  EXPECT_EQ(out[2].data, (Values{0, 10, 0, 20, 30, 0}));
  EXPECT_EQ(out[3].data, (Values{10, 0, 20, 0, 0, 30}));
  // Overlapping windows (size 3, stride 1) that pick the same element add up there.
  auto overlap = evaluate_f64(R"({ lambda ; s:f32[4] x:f32[6]. let
      u:f32[6] = select_and_scatter_add[padding=((0, 0),) select_prim=ge window_dimensions=(3,) window_strides=(1,)] s x
    in (u,) })", {tensor_of({4}, {1, 2, 3, 4}), x});
  EXPECT_EQ(overlap[0].data, (Values{0, 3, 0, 7, 0, 0}));  // windows [1 5 2] [5 2 4] -> 5; [2 4 3] [4 3 0] -> 4
}

TEST(WindowSemantics, MaxPoolGradientGoesToEachWindowsMax) {
  // d/dx sum(max_pool(x)): 1 where a window has its max, as JAX's select_and_scatter_add puts it.
  const Program p = parse_program(R"({ lambda ; x:f32[6]. let
      m:f32[3] = reduce_window_max[base_dilation=(1,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(2,) window_strides=(2,)] x
    in (m,) })", "max_pool");
  const GradientResult r = interpret_gradient(linearize_with(p), {}, {tensor_of({6}, {1, 5, 2, 4, 3, 0})}, Arithmetic::kFloat64);
  ASSERT_TRUE(r.gradients[0].has_value());
  EXPECT_EQ(r.gradients[0]->data, (Values{0, 1, 0, 1, 1, 0}));
}

}  // namespace
}  // namespace rematkit::testing
