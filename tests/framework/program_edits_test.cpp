// --wrt and --retarget-policy: which arguments are differentiated, and checkpoints given another
// policy in place; residuals worked out by hand from JAX's rules.
#include "rematkit/ir/program_edits.hpp"

#include <gtest/gtest.h>

#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

const char* kMulSin = "{ lambda ; w:f32[3] x:f32[3] n:i32[]. let y:f32[3] = mul w x\n z:f32[3] = sin y in (z,) }";

TEST(ArgumentIndices, NamesAndIndicesInArgumentOrder) {
  const Program p = parse_program(kMulSin, "p");
  EXPECT_EQ(argument_indices(p, {"x", "w"}, "--wrt"), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(argument_indices(p, {"1", "x"}, "--wrt"), (std::vector<size_t>{1}));
  EXPECT_EQ(usage_error([&] { argument_indices(p, {"v"}, "--wrt"); }),
            "--wrt: 'v' is not an argument of the program (the arguments: w, x, n)");
  EXPECT_EQ(usage_error([&] { argument_indices(p, {"3"}, "--wrt"); }),
            "--wrt: '3' is not an argument of the program (the arguments: w, x, n)");
  EXPECT_EQ(usage_error([&] { argument_indices(p, {"n"}, "--wrt"); }),
            "--wrt: argument 'n' is i32[]; only floating arguments have gradients");
  EXPECT_EQ(usage_error([&] { argument_indices(p, {}, "wrt"); }), "wrt names no argument (the arguments: w, x, n)");
}

TEST(ArgumentIndices, OnlyTheSelectedArgumentsAreDifferentiated) {
  const Program p = parse_program(kMulSin, "p");
  // All floating arguments: mul's tangent tw * x + w * tx reads x and w; sin's reads cos(y).
  EXPECT_EQ(residual_lines(linearize(p, {})), (std::vector<std::string>{"f32[3] from the argument w", "f32[3] from the argument x",
                                                                         "f32[3] output of cos from p:2"}));
  // With respect to w alone: tw * x reads x only.
  LinearizeOptions options;
  options.differentiate = argument_indices(p, {"w"}, "--wrt");
  const Linearization lin = linearize(p, options);
  EXPECT_EQ(residual_lines(lin), (std::vector<std::string>{"f32[3] from the argument x", "f32[3] output of cos from p:2"}));
  EXPECT_EQ(lin.argument_tangents[1], kNoValue);
}

// A checkpoint inside a jitted function, and one at the top level.
const char* kTwoCheckpoints = R"({ lambda ; w:f32[4,3] x:f32[2,4]. let
    y:f32[2,3] = pjit[name=layer jaxpr={ lambda ; a:f32[4,3] b:f32[2,4]. let
        c:f32[2,3] = checkpoint[policy=nothing_saveable prevent_cse=True jaxpr={ lambda ; e:f32[4,3] f:f32[2,4]. let
            g:f32[2,3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] f e
            h:f32[2,3] = sin g
          in (h,) }] a b
      in (c,) }] w x
    z:f32[2,3] = checkpoint[policy=nothing_saveable jaxpr={ lambda ; u:f32[2,3]. let v:f32[2,3] = sin u in (v,) }] y
    l:f32[] = reduce_sum[axes=(0, 1)] z
  in (l,) })";

TEST(Retarget, EveryCheckpointGetsThePolicyWhereItIs) {
  const Program p = parse_program(kTwoCheckpoints, "p");
  const Program r = retarget_checkpoint_policies(p, "dots_saveable", "--retarget-policy");
  const Equation& inner = r.eqns[0].body()->eqns[0];
  ASSERT_EQ(inner.prim, Prim::kCheckpoint);
  EXPECT_EQ(inner.params.find("policy")->str(), "dots_saveable");
  EXPECT_EQ(inner.params.find("prevent_cse")->str(), "True");  // the rest is kept
  EXPECT_EQ(r.eqns[1].params.find("policy")->str(), "dots_saveable");
  EXPECT_EQ(p.eqns[1].params.find("policy")->str(), "nothing_saveable");  // the original is untouched
  // nothing_saveable keeps each checkpoint's inputs (the second's is the sin at line 5, computed in
  // the jitted function); dots_saveable also the product at line 4, which the inner backward pass
  // reads instead of recomputing it (sin's cos reads it).
  EXPECT_EQ(residual_lines(linearize(p, {})),
            (std::vector<std::string>{"f32[4,3] from the argument w", "f32[2,4] from the argument x",
                                      "f32[2,3] output of jitted function 'layer' from p:5"}));
  EXPECT_EQ(residual_lines(linearize(r, {})),
            (std::vector<std::string>{"f32[4,3] from the argument w", "f32[2,4] from the argument x",
                                      "f32[2,3] output of jitted function 'layer' from p:4",
                                      "f32[2,3] output of jitted function 'layer' from p:5"}));
  EXPECT_EQ(usage_error([&] { retarget_checkpoint_policies(parse_program(kMulSin, "p"), "dots_saveable", "--retarget-policy"); }),
            "--retarget-policy: the program has no checkpoint whose policy could be replaced (to checkpoint the whole "
            "program with a policy, give it as the policy)");
  EXPECT_NE(usage_error([&] { retarget_checkpoint_policies(p, "dots_saveable(", "--retarget-policy"); }).find("--retarget-policy:1:"),
            std::string::npos);
}

}  // namespace
}  // namespace rematkit::testing
