// Reading what JAX prints, and print(parse(text)) parsing back to the same program.
#include <gtest/gtest.h>

#include <algorithm>

#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

void expect_round_trip(const Program& p) {
  const std::string text = print_program(p);
  const Program again = parse_program(text, "printed");
  EXPECT_EQ(p, again) << text;
  EXPECT_EQ(print_program(again), text);
}

TEST(Parser, EveryReferenceCaseRoundTrips) {
  for (const ResidualCase& c : residual_cases()) {
    SCOPED_TRACE(c.name);
    expect_round_trip(load_program(c.program_path));
  }
}

TEST(Parser, ReadsTypesLiteralsAndLocations) {
  const Program p = parse_program(R"({ lambda a:f32[1] ; x:f32[2,3] n:i32[] m:bool[4]. let
    y:f32[2,3] = mul x 2.0:f32[]
    _:f32[2,3] = add y 1
  in (y,) })", "f.jaxpr");
  ASSERT_EQ(p.constvars.size(), 1u);
  ASSERT_EQ(p.invars.size(), 3u);
  EXPECT_EQ(p.vars[p.invars[0]].type.str(), "f32[2,3]");
  EXPECT_EQ(p.vars[p.invars[2]].type.str(), "bool[4]");
  EXPECT_EQ(p.eqns[0].where, (SourceLocation{"f.jaxpr", 2, 18}));
  EXPECT_EQ(p.eqns[0].inputs[1].literal, 2.0);
  // An untyped literal takes its dtype from the other operand.
  EXPECT_EQ(p.eqns[1].inputs[1].type.str(), "f32[]");
  expect_round_trip(p);
}

TEST(Parser, AcceptsWhatJaxPrints) {
  // Equations separated by ';', jit and remat2 aliases, unknown params, a policy as a function repr,
  // shared sub-programs out of line (used before their definition, one named like a keyword),
  // broadcast_in_dim without params, custom_jvp_call and pjit[name=relu].
  const Program p = parse_program(R"(
let lambda = { lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = cos b in (c,) } in
let f1 = { lambda ; a:f32[3]. let b:f32[3] = pjit[name=inner jaxpr=lambda] a in (b,) } in
{ lambda ; x:f32[3]. let
    y:f32[3] = jit[name=outer jaxpr=f1 keep_unused=False inline=False] x
    z:f32[3] = remat2[differentiated=False jaxpr={ lambda ; w:f32[3]. let
        v:f32[3] = mul w w
      in (v,) } policy=<function checkpoint_dots at 0x7f2a3c1b0ee0> prevent_cse=True] y
    zero:f32[3] = broadcast_in_dim 0.0
    r:f32[3] = custom_jvp_call[name=relu call_jaxpr={ lambda ; u:f32[3]. let
        t:f32[3] = pjit[name=relu jaxpr={ lambda ; s:f32[3]. let q:f32[3] = max s 0.0 in (q,) }] u
      in (t,) } jvp_jaxpr_fun=<function relu_jvp at 0x1> num_consts=0 symbolic_zeros=False] z
    r2:f32[3] = custom_jvp_call[call_jaxpr={ lambda ; u:f32[3]. let
        t:f32[3] = pjit[name=relu jaxpr={ lambda ; s:f32[3]. let q:f32[3] = max s 0.0 in (q,) }] u
      in (t,) } num_consts=0] r
    s:f32[3] = add r2 zero
  in (s,) })", "jax.txt");
  ASSERT_EQ(p.eqns.size(), 6u);
  EXPECT_EQ(p.eqns[0].prim, Prim::kPjit);
  EXPECT_EQ(p.eqns[1].prim, Prim::kCheckpoint);
  EXPECT_EQ(p.eqns[1].params.find("policy")->text, "checkpoint_dots");
  EXPECT_EQ(p.eqns[2].params.find("shape")->str(), "(3,)");
  EXPECT_EQ(p.eqns[3].prim, Prim::kRelu);
  EXPECT_EQ(p.eqns[4].prim, Prim::kRelu);
  EXPECT_EQ(p.eqns[1].params.find("jaxpr")->program->eqns.size(), 1u);
  expect_round_trip(p);
  // The policy repr resolves to the built-in policy; jit labels its residuals.
  const Linearization lin = linearize_with(p);
  bool saw_jit_label = false;
  for (const std::string& line : residual_lines(lin))
    saw_jit_label |= line.find("output of jitted function 'outer'") != std::string::npos;
  EXPECT_TRUE(saw_jit_label);
}

TEST(Parser, ReadsBroadcastInDimAsJax011PrintsIt) {
  // One dense layer with relu, as jax.make_jaxpr prints it in JAX 0.11: broadcast_in_dim gives its
  // broadcast_dimensions and takes its shape from the binder.
  const Program p = parse_program(R"({ lambda ; a:f32[4,3] b:f32[3] c:f32[2,4]. let
    d:f32[2,3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] c a
    e:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] b
    f:f32[2,3] = add d e
    g:f32[2,3] = max f 0.0:f32[]
  in (g,) })", "dense.jaxpr");
  const Params& params = p.eqns[1].params;
  EXPECT_EQ(params.find("shape")->str(), "(1, 3)");
  EXPECT_EQ(params.find("broadcast_dimensions")->str(), "(1,)");
  expect_round_trip(p);
}

TEST(Parser, ReadsConvolutionAndPoolingAsJaxPrintsThem) {
  // A Flax nn.Conv (NHWC input, HWIO kernel, padding 'SAME' resolved to pairs), then nn.max_pool
  // and nn.avg_pool's window sum, as jax.make_jaxpr prints them.
  const Program p = parse_program(R"({ lambda ; a:f32[8,32,32,3] b:f32[3,3,3,16]. let
    c:f32[8,32,32,16] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a b
    d:f32[8,16,16,16] = reduce_window_max[base_dilation=(1, 1, 1, 1) padding=((0, 0), (0, 0), (0, 0), (0, 0)) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 2, 2, 1) window_strides=(1, 2, 2, 1)] c
    e:f32[8,8,8,16] = reduce_window_sum[base_dilation=(1, 1, 1, 1) padding=((0, 0), (0, 0), (0, 0), (0, 0)) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 2, 2, 1) window_strides=(1, 2, 2, 1)] d
  in (e,) })", "cnn.jaxpr");
  ASSERT_EQ(p.eqns.size(), 3u);
  EXPECT_EQ(p.eqns[0].prim, Prim::kConvGeneralDilated);
  const ConvParams c = conv_params(p.eqns[0].params, {});
  EXPECT_EQ(c.dims, (ConvDims{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}}));
  EXPECT_EQ(c.padding, (std::vector<PadPair>{{1, 1}, {1, 1}}));
  EXPECT_EQ(c.window_strides, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.feature_group_count, 1);
  // The builders write what JAX prints, in its order.
  EXPECT_EQ(p.eqns[0].params, conv_general_dilated_params(c));
  const WindowParams w = window_params(p.eqns[1].params, {});
  EXPECT_EQ(w.window_dimensions, (std::vector<int64_t>{1, 2, 2, 1}));
  EXPECT_EQ(p.eqns[1].params, reduce_window_params(w));
  EXPECT_EQ(p.eqns[2].prim, Prim::kReduceWindowSum);
  expect_round_trip(p);
  // Its gradient: the pools' transposes and the convolution's, as JAX writes them.
  const Linearization lin = linearize_with(p);
  std::vector<std::string> backward;
  for (int e : lin.backward) backward.push_back(std::string(prim_name(lin.graph.eqns[e].prim)));
  for (const char* prim : {"pad", "reduce_window_sum", "select_and_scatter_add", "rev", "conv_general_dilated"})
    EXPECT_NE(std::find(backward.begin(), backward.end(), prim), backward.end()) << prim;
}

TEST(Parser, AcceptsPolicyReprsOfEveryJaxVersion) {
  const char* policies[] = {
      "dots_saveable", "checkpoint_dots", "<function dot_with_no_batch_dims at 0x1>",
      "dot_with_no_batch_dims_saveable", "DotsSaveable(only_if_no_batch_dims=True)",
      "SaveOnlyTheseNames(saveable_names=frozenset({'a', 'b'}))", "SaveAnyNamesButThese(names=frozenset())",
      "OffloadDotWithNoBatchDims(offload_src='device', offload_dst='pinned_host')",
      ("SaveAndOffloadOnlyTheseNames(names_which_can_be_saved=frozenset({'a'}), names_which_can_be_offloaded="
       "frozenset(), offload_src='device', offload_dst='pinned_host')"),
      "None", "save_from_both_policies(dots_saveable, save_only_these_names('a'))"};
  for (const char* policy : policies) {
    SCOPED_TRACE(policy);
    const std::string text = std::string("{ lambda ; x:f32[2]. let y:f32[2] = checkpoint[jaxpr={ lambda ; a:f32[2]. let "
                                         "b:f32[2] = sin a in (b,) } policy=") + policy + "] x in (y,) }";
    const Program p = parse_program(text, "p");
    EXPECT_NO_THROW(linearize_with(p));
    expect_round_trip(p);
  }
}

}  // namespace
}  // namespace rematkit::testing
