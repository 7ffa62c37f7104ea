// custom_jvp_call and custom_vjp_call as JAX 0.11 prints them (custom_derivatives.py's pretty-printing
// rules: name=, call_jaxpr=, jvp=/bwd=). For the custom_jvp functions of jax/_src/nn/functions.py the
// residuals are worked out by hand from JAX's rule; any other function is differentiated through its
// body, which --explain says. Gradients are checked against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// jax.nn.softmax(x) on f32[2,3]: _softmax(x, axis=-1, where=None, initial=-inf), with jnp.max's
// `initial` an operand.
const char* kSoftmax = R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = custom_jvp_call[
      name=_softmax
      call_jaxpr={ lambda ; c:f32[2,3] d:f32[]. let
          e:f32[2] = reduce_max[axes=(1,) out_sharding=None] c
          f:f32[2] = max e d
          g:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1) sharding=None] f
          h:f32[2,3] = sub c g
          i:f32[2,3] = exp h
          j:f32[2] = reduce_sum[axes=(1,) out_sharding=None] i
          k:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1) sharding=None] j
          l:f32[2,3] = div i k
        in (l,) }
      jvp=_softmax_jvp
      symbolic_zeros=False
    ] a -inf:f32[]
    m:f32[2,3] = mul b a
  in (m,) })";

// jax.nn.softmax(x, where=mask): the mask is the second operand.
const char* kMaskedSoftmax = R"({ lambda ; a:f32[2,3] w:bool[2,3]. let
    b:f32[2,3] = custom_jvp_call[
      name=_softmax
      call_jaxpr={ lambda ; c:f32[2,3] v:bool[2,3] d:f32[]. let
          n:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3) sharding=None] d
          s:f32[2,3] = select_n v n c
          e:f32[2] = reduce_max[axes=(1,) out_sharding=None] s
          g:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1) sharding=None] e
          h:f32[2,3] = sub s g
          i:f32[2,3] = exp h
          z:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3) sharding=None] 0.0:f32[]
          y:f32[2,3] = select_n v z i
          j:f32[2] = reduce_sum[axes=(1,) out_sharding=None] y
          k:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1) sharding=None] j
          l:f32[2,3] = div i k
          r:f32[2,3] = select_n v z l
        in (r,) }
      jvp=_softmax_jvp
      symbolic_zeros=False
    ] a w -inf:f32[]
  in (b,) })";

// jax.nn.relu6: custom_jvp of a jitted min(max(x, 0), 6).
const char* kRelu6 = R"({ lambda ; a:f32[4]. let
    b:f32[4] = custom_jvp_call[
      name=relu6
      call_jaxpr={ lambda ; c:f32[4]. let
          d:f32[4] = pjit[name=relu6 jaxpr={ lambda ; e:f32[4]. let
              f:f32[4] = max e 0.0:f32[]
              g:f32[4] = min f 6.0:f32[]
            in (g,) }] c
        in (d,) }
      jvp=relu6
      symbolic_zeros=False
    ] a
  in (b,) })";

// jax.nn.log1mexp, log(1 - exp(-x)) for x > 0 (here through log1p alone).
const char* kLog1mexp = R"({ lambda ; a:f32[4]. let
    b:f32[4] = custom_jvp_call[
      name=log1mexp
      call_jaxpr={ lambda ; c:f32[4]. let
          d:f32[4] = neg c
          e:f32[4] = exp d
          f:f32[4] = neg e
          g:f32[4] = log1p f
        in (g,) }
      jvp=log1mexp
      symbolic_zeros=False
    ] a
  in (b,) })";

// A user's custom_jvp function: rematkit has no rule for it.
const char* kUserJvp = R"({ lambda ; a:f32[4]. let
    b:f32[4] = custom_jvp_call[name=f call_jaxpr={ lambda ; c:f32[4]. let d:f32[4] = sin c in (d,) }
      jvp=f_jvp symbolic_zeros=False] a
  in (b,) })";

// A user's custom_vjp function, as JAX 0.11 prints it and as older JAX did (custom_vjp_call_jaxpr).
const char* kUserVjp = R"({ lambda ; a:f32[4]. let
    b:f32[4] = custom_vjp_call[name=g bwd=g_bwd call_jaxpr={ lambda ; c:f32[4]. let
        d:f32[4] = sin c
        e:f32[4] = mul d c
      in (e,) } fwd=g_fwd symbolic_zeros=False] a
  in (b,) })";
const char* kOldUserVjp = R"({ lambda ; a:f32[4]. let
    b:f32[4] = custom_vjp_call_jaxpr[bwd=<function g_bwd at 0x7f21d3c0> fun_jaxpr={ lambda ; c:f32[4]. let
        d:f32[4] = sin c
        e:f32[4] = mul d c
      in (e,) } fwd_jaxpr_thunk=<function g_fwd at 0x7f21d3e0> num_consts=0 out_trees=<function out_trees at 0x7f2> symbolic_zeros=False] a
  in (b,) })";

std::vector<std::string> residuals(const char* text, const std::string& policy = "") {
  static const std::regex suffix(R"( from [^ ]+:[0-9]+$)");
  std::vector<std::string> lines;
  for (const std::string& line : residual_lines(linearize_with(parse_program(text, "p"), policy)))
    lines.push_back(std::regex_replace(line, suffix, ""));
  return lines;
}

// The mul also reads b and a: b is the call's output, a an argument.
TEST(CustomJvp, SoftmaxKeepsOnlyItsOutputAsJaxsRuleDoes) {
  // _softmax_jvp: y * (x_dot - sum(y * x_dot)) reads y alone; mul(b, a) reads both.
  EXPECT_EQ(residuals(kSoftmax), (std::vector<std::string>{"f32[2,3] from the argument a", "f32[2,3] output of custom_jvp_call"}));
}

// jax.nn.softmax as JAX 0.4.3x printed it (tests/data/real/unsupported/37, a GPT-2 block): no
// name=, a jvp_jaxpr_thunk, and _softmax's body.
const char* kUnnamedSoftmax = R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = custom_jvp_call[
      call_jaxpr={ lambda ; c:f32[2,3]. let
          e:f32[2] = reduce_max[axes=(1,)] c
          g:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] e
          h:f32[2,3] = sub c g
          i:f32[2,3] = exp h
          j:f32[2] = reduce_sum[axes=(1,)] i
          k:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] j
          l:f32[2,3] = div i k
        in (l,) }
      jvp_jaxpr_thunk=<function _memoize.<locals>.memoized at 0x7f8b3c1d5e10>
      num_consts=0
      symbolic_zeros=False
    ] a
    m:f32[2,3] = mul b a
  in (m,) })";

TEST(CustomJvp, AnOlderJaxsUnnamedSoftmaxIsKnownByItsBody) {
  EXPECT_EQ(residuals(kUnnamedSoftmax),
            (std::vector<std::string>{"f32[2,3] from the argument a", "f32[2,3] output of custom_jvp_call"}));
  // A body that is not _softmax's (the sum over another axis) is differentiated through.
  std::string other = kUnnamedSoftmax;
  other.replace(other.find("j:f32[2] = reduce_sum[axes=(1,)] i"), 34, "j:f32[3] = reduce_sum[axes=(0,)] i");
  other.replace(other.find("k:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] j"), 71,
                "k:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] j");
  EXPECT_NE(residuals(other.c_str()),
            (std::vector<std::string>{"f32[2,3] from the argument a", "f32[2,3] output of custom_jvp_call"}));
}

TEST(CustomJvp, MaskedSoftmaxAlsoKeepsTheMaskAndTheZerosOfItsWhere) {
  // The masked sum is jnp.where(where, y * x_dot, 0): the mask and the zeros are read too.
  EXPECT_EQ(residuals(kMaskedSoftmax),
            (std::vector<std::string>{"bool[2,3] from the argument w", "f32[2,3] output of custom_jvp_call",
                                      "f32[2,3] output of broadcast_in_dim"}));
}

TEST(CustomJvp, Relu6AndLog1mexpUseJaxsRules) {
  // relu6: select((x > 0) & (x < 6), g, zeros): the mask and the zeros, as with relu.
  EXPECT_EQ(residuals(kRelu6), (std::vector<std::string>{"bool[4] output of and", "f32[4] output of broadcast_in_dim"}));
  // log1mexp: g / expm1(x): expm1's output; nothing of the body.
  EXPECT_EQ(residuals(kLog1mexp), (std::vector<std::string>{"f32[4] output of expm1"}));
}

TEST(CustomJvp, PoliciesDecideTheCallAsOneEquation) {
  // Saved whole under everything_saveable; under nothing_saveable only the argument is kept and
  // the body's six equations run again in the backward pass.
  EXPECT_EQ(residuals(kSoftmax, "everything_saveable"),
            (std::vector<std::string>{"f32[2,3] from the argument a", "f32[2,3] output of custom_jvp_call"}));
  const Linearization lin = linearize_with(parse_program(kSoftmax, "p"), "nothing_saveable");
  EXPECT_EQ(residual_lines(lin), (std::vector<std::string>{"f32[2,3] from the argument a"}));
  EXPECT_EQ(lin.recomputed.size(), 8u);  // reduce_max, max, broadcast, sub, exp, reduce_sum, broadcast, div
}

TEST(CustomJvp, OtherFunctionsAreDifferentiatedThroughTheirBodyAndExplainSaysSo) {
  EXPECT_EQ(residuals(kUserJvp), (std::vector<std::string>{"f32[4] output of cos"}));
  const std::string report = format_residual_report(linearize_with(parse_program(kUserJvp, "p")), true);
  EXPECT_NE(report.find("custom_jvp_call 'f' at p:2: differentiated through its body; its rule f_jvp is Python code"),
            std::string::npos)
      << report;
  const std::string softmax_report = format_residual_report(linearize_with(parse_program(kSoftmax, "p")), true);
  EXPECT_EQ(softmax_report.find("differentiated through its body"), std::string::npos) << softmax_report;
}

TEST(CustomVjp, DifferentiatedThroughItsBodyInBothSpellings) {
  // sin(c) * c: the tangent reads cos(c) (sin's rule), and sin's output and c (mul's).
  const std::vector<std::string> expected{"f32[4] from the argument a", "f32[4] output of sin", "f32[4] output of cos"};
  EXPECT_EQ(residuals(kUserVjp), expected);
  EXPECT_EQ(residuals(kOldUserVjp), expected);
  const std::string report = format_residual_report(linearize_with(parse_program(kOldUserVjp, "p")), true);
  EXPECT_NE(report.find("custom_vjp_call at p:2: differentiated through its body; its rule g_bwd"), std::string::npos)
      << report;
}

void expect_gradients_match_finite_differences(const char* text, bool positive) {
  const Program program = parse_program(text, "p");
  for (const char* policy : {"", "nothing_saveable"}) {
    const RandomInputs in = random_inputs(program, 3, 0.3, 1.2, !positive);
    const GradientResult ad = interpret_gradient(linearize_with(program, policy), in.constants, in.arguments, Arithmetic::kFloat64);
    const std::vector<Tensor> fd = finite_difference_gradients(program, in);
    ASSERT_TRUE(ad.gradients[0].has_value());
    for (size_t i = 0; i < fd[0].data.size(); ++i)
      EXPECT_NEAR(ad.gradients[0]->data[i], fd[0].data[i], 1e-6 * (1 + std::fabs(fd[0].data[i]))) << policy << " " << i;
  }
}

TEST(CustomDerivatives, GradientsMatchFiniteDifferences) {
  expect_gradients_match_finite_differences(kSoftmax, false);
  expect_gradients_match_finite_differences(kRelu6, false);
  expect_gradients_match_finite_differences(kLog1mexp, true);
  expect_gradients_match_finite_differences(kUserJvp, false);
  expect_gradients_match_finite_differences(kUserVjp, false);
}

TEST(CustomDerivatives, MaskedSoftmaxGradientMatchesFiniteDifferences) {
  // A fixed mask with one live element or more per row (an all-false row is NaN in JAX too).
  const Program program = parse_program(kMaskedSoftmax, "p");
  RandomInputs in = random_inputs(program, 4);
  in.arguments[1] = Tensor{program.vars[program.invars[1]].type, {1, 0, 1, 0, 1, 1}};
  const GradientResult ad = interpret_gradient(linearize_with(program), in.constants, in.arguments, Arithmetic::kFloat64);
  const std::vector<Tensor> fd = finite_difference_gradients(program, in);
  ASSERT_TRUE(ad.gradients[0].has_value());
  for (size_t i = 0; i < fd[0].data.size(); ++i) EXPECT_NEAR(ad.gradients[0]->data[i], fd[0].data[i], 1e-6) << i;
}

}  // namespace
}  // namespace rematkit::testing
