// When the backward pass recomputes what: each checkpoint's recomputation runs where the reverse
// pass reaches it, and inside an enclosing checkpoint's backward pass the inner policy decides again
// (jax-checkpoint.md section 2.4). Expected schedules are derived by hand from that algorithm.
#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// (primitive, line) of each recomputed equation, in backward order.
std::vector<std::pair<std::string, int>> recomputations(const Linearization& lin) {
  std::vector<std::pair<std::string, int>> out;
  for (int e : lin.recomputed) out.emplace_back(prim_name(lin.graph.eqns[e].prim), lin.graph.eqns[e].where.line);
  return out;
}

TEST(RematSchedule, RecursiveCheckpointAppliesInnerPoliciesInTheOuterBackward) {
  // nb_recursive_checkpoint_8: a = A(x) with A = [I = [sin@17, sin@18], sin@23, sin@24] and I nested in A;
  // i = B(a) with B = [sin@32, sin@33]; then sin, sin at the top. All policies nothing_saveable.
  // Reverse pass: the top-level sins use saved cos values. B's backward recomputes sin@32 and the
  // coefficients cos@32, cos@33. A's backward needs I's output (for cos@23), so its phase computes
  // sin@17, sin@18 (I's policy makes them Recompute, but I's output is needed outside I), then
  // sin@23, cos@23, cos@24. Finally I's own backward recomputes sin@17 again, with cos@17, cos@18.
  const Program p = load_program(data_dir() + "/residual-cases/nb_recursive_checkpoint_8.jaxpr");
  const std::vector<std::pair<std::string, int>> expected = {
      {"sin", 32}, {"cos", 32}, {"cos", 33},                              // B
      {"sin", 17}, {"sin", 18}, {"sin", 23}, {"cos", 23}, {"cos", 24},  // A's phase
      {"sin", 17}, {"cos", 17}, {"cos", 18},                              // I, nested in A
  };
  EXPECT_EQ(recomputations(linearize_with(p)), expected);
}

TEST(RematSchedule, SiblingCheckpointsRecomputeWhenTheReversePassReachesThem) {
  // Three checkpointed layers x -> sin(W1 x) -> sin(W2 .) -> sin(W3 .): the third layer's cos is
  // recomputed first, and each layer's recomputation comes right before its own transposed equations.
  const Program p = load_program(data_dir() + "/residual-cases/nb_three_layer_checkpoint_each_g.jaxpr");
  const Linearization lin = linearize_with(p);
  const std::vector<std::pair<std::string, int>> expected = {
      {"dot_general", 33}, {"cos", 34}, {"dot_general", 24}, {"cos", 25}, {"dot_general", 15}, {"cos", 16}};
  EXPECT_EQ(recomputations(lin), expected);
  // Between two layers' recomputations lies the transposition of the later layer.
  int seen_recompute = 0, transposed_between = 0;
  for (int e : lin.backward) {
    const FlatEquation& eqn = lin.graph.eqns[e];
    if (eqn.role != EqnRole::kBackward) seen_recompute += eqn.prim == Prim::kCos;
    else if (seen_recompute == 1) ++transposed_between;
  }
  EXPECT_GT(transposed_between, 0);
}

TEST(RematSchedule, SaveableInnerValuesAreComputedInTheOuterPhase) {
  // An outer nothing_saveable checkpoint around an inner dots_saveable one: in the outer backward,
  // the inner dot is Saveable, so the outer phase computes it once and the inner backward only
  // recomputes the cos coefficient from it.
  const Program p = parse_program(R"({ lambda ; w:f32[3,3] x:f32[3]. let
    y:f32[3] = checkpoint[policy=nothing_saveable jaxpr={ lambda ; a:f32[3,3] b:f32[3]. let
        c:f32[3] = checkpoint[policy=dots_saveable jaxpr={ lambda ; d:f32[3,3] e:f32[3]. let
            f:f32[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] d e
            g:f32[3] = sin f
          in (g,) }] a b
      in (c,) }] w x
  in (y,) })", "nested");
  const std::vector<std::pair<std::string, int>> expected = {{"dot_general", 4}, {"cos", 5}};
  EXPECT_EQ(recomputations(linearize_with(p)), expected);
}

}  // namespace
}  // namespace rematkit::testing
