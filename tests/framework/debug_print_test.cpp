// Debug prints (debug_callback, debug_print): equations with no outputs, read in every form JAX
// printed, kept in order, run again where a checkpoint recomputes them by JAX's own rule
// (jax/_src/debugging.py, _debug_callback_partial_eval_custom), with their operands alive until they
// run. Every expectation below is worked out by hand from those rules.
#include <gtest/gtest.h>

#include <algorithm>

#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

std::string form(const std::string& name) { return data_dir() + "/jax-forms/" + name; }

// A checkpoint whose body prints `printed` (c: exp of b, which nothing else reads; a: the
// checkpoint's argument), or prints nothing.
std::string model(const std::string& printed) {
  const std::string print =
      printed.empty() ? "" : "        debug_callback[callback=<function f at 0x7f> effect=Debug] " + printed + "\n";
  return "{ lambda ; x:f32[4]. let\n"                                      // 1
         "    o:f32[4] = checkpoint[jaxpr={ lambda ; a:f32[4]. let\n"      // 2
         "        b:f32[4] = sin a\n"                                      // 3
         "        c:f32[4] = exp b\n"                                      // 4
         + print +                                                         // 5 with a print
         "        d:f32[4] = mul b 2.0:f32[]\n"
         "      in (d,) } policy=POLICY prevent_cse=True differentiated=False] x\n"
         "    s:f32[] = reduce_sum[axes=(0,)] o\n"
         "  in (s,) }\n";
}

Linearization linearized(const std::string& printed, const std::string& policy) {
  std::string text = model(printed);
  text.replace(text.find("POLICY"), 6, policy);
  return linearize_with(parse_program(text, "p"));
}

// How often each pass runs the print: in the forward pass, and again in the backward pass.
std::pair<int, int> prints(const Linearization& lin) {
  auto count = [&](const std::vector<int>& eqns) {
    return static_cast<int>(std::count_if(eqns.begin(), eqns.end(), [&](int e) {
      return lin.graph.eqns[static_cast<size_t>(e)].prim == Prim::kDebugCallback;
    }));
  };
  return {count(lin.forward), count(lin.backward)};
}

bool runs(const Linearization& lin, const std::vector<int>& eqns, Prim prim) {
  return std::any_of(eqns.begin(), eqns.end(), [&](int e) { return lin.graph.eqns[static_cast<size_t>(e)].prim == prim; });
}

TEST(DebugPrint, EveryFormJaxPrintedIsOneEquationWithNoOutputs) {
  for (const char* file : {"debug_callback_jax0_4_21.jaxpr", "debug_callback_jax0_6.jaxpr", "debug_print_jax0_8_1.jaxpr"}) {
    SCOPED_TRACE(file);
    const Program p = load_program(form(file));
    ASSERT_EQ(p.eqns.size(), 3u);
    const Equation& print = p.eqns[1];
    EXPECT_EQ(print.prim, Prim::kDebugCallback);
    EXPECT_TRUE(print.outputs.empty());
    EXPECT_EQ(print.inputs.size(), std::string(file) == "debug_print_jax0_8_1.jaxpr" ? 2u : 1u);
    EXPECT_EQ(p.vars[static_cast<size_t>(print.inputs[0].var)].name, "b");
    // Printed back with no '=', and read back the same.
    EXPECT_EQ(parse_program(print_program(p), "again"), p);
  }
  // debug_print's format string, printed bare, is kept whole.
  EXPECT_EQ(load_program(form("debug_print_jax0_8_1.jaxpr")).eqns[1].params.find("fmt")->text, "b is {} and a is {x}");
  const Program inside = load_program(form("debug_callback_jax0_4_22.jaxpr"));
  EXPECT_TRUE(inside.eqns[0].body()->eqns[1].outputs.empty());
}

TEST(DebugPrint, OnlyAnEffectMayHaveNoOutputs) {
  EXPECT_EQ(usage_error([] { parse_program("{ lambda ; a:f32[]. let\n = sin a in (a,) }", "p"); }),
            "p:2:4: an equation needs at least one output");
}

TEST(DebugPrint, WithoutACheckpointItPrintsOnceInTheForwardPass) {
  const Linearization lin = linearize_with(load_program(form("debug_callback_jax0_6.jaxpr")));
  EXPECT_EQ(prints(lin), std::make_pair(1, 0));
  // Ordered as written: after the sin it prints, before the sum.
  std::vector<Prim> order;
  for (int e : lin.forward)
    if (lin.graph.eqns[static_cast<size_t>(e)].role == EqnRole::kPrimal) order.push_back(lin.graph.eqns[static_cast<size_t>(e)].prim);
  EXPECT_EQ(order, (std::vector<Prim>{Prim::kSin, Prim::kDebugCallback, Prim::kReduceSum}));
}

TEST(DebugPrint, InACheckpointItPrintsAgainWhereThePolicyDoesNotSaveIt) {
  // nothing_saveable and dots_saveable do not save the print: it runs again in the backward pass.
  EXPECT_EQ(prints(linearized("c", "None")), std::make_pair(1, 1));
  EXPECT_EQ(prints(linearized("c", "dots_saveable")), std::make_pair(1, 1));
  // everything_saveable saves it: it runs once, as c is computed inside (not instantiated there)...
  EXPECT_EQ(prints(linearized("c", "everything_saveable")), std::make_pair(1, 0));
  // ...and twice when all it reads is the checkpoint's own argument.
  EXPECT_EQ(prints(linearized("a", "everything_saveable")), std::make_pair(1, 1));
}

TEST(DebugPrint, WhatItReadsIsComputedForItAndKeptAsAnyBackwardReadIs) {
  // Without the print, c = exp b is read by nothing: neither pass computes it.
  const Linearization plain = linearized("", "None");
  EXPECT_FALSE(runs(plain, plain.forward, Prim::kExp));
  EXPECT_FALSE(runs(plain, plain.backward, Prim::kExp));
  // With it, the forward pass computes c, and nothing_saveable's backward pass computes it again
  // (from the kept x, through sin) for the print's second run. The residuals are the same: x alone.
  const Linearization printed = linearized("c", "None");
  EXPECT_TRUE(runs(printed, printed.forward, Prim::kExp));
  EXPECT_TRUE(runs(printed, printed.backward, Prim::kExp));
  EXPECT_EQ(residual_lines(printed), (std::vector<std::string>{"f32[4] from the argument x"}));
  EXPECT_EQ(residual_lines(plain), residual_lines(printed));
  // everything_saveable keeps sin's cos for the backward pass. A print of the argument that runs
  // again there keeps the argument too; a print of c, run once, keeps nothing more.
  const std::vector<std::string> coefficient{"f32[4] output of cos from p:3"};
  EXPECT_EQ(residual_lines(linearized("", "everything_saveable")), coefficient);
  EXPECT_EQ(residual_lines(linearized("c", "everything_saveable")), coefficient);
  EXPECT_EQ(residual_lines(linearized("a", "everything_saveable")),
            (std::vector<std::string>{"f32[4] from the argument x", "f32[4] output of cos from p:3"}));
}

TEST(DebugPrint, ItsOperandsLiveUntilItRunsAndTheGradientIsThePrograms) {
  const BackendOptions reference{{"reference"}, &default_plugins()};
  const Linearization printed = linearized("c", "None"), plain = linearized("", "None");
  const StepProgram steps = build_step_program(printed, reference, Pass::kBackward, InputMode::kLoadedEachRun);
  std::vector<int> effects;
  for (size_t s = 0; s < steps.steps().size(); ++s)
    if (steps.steps()[s].kind == StepKind::kEffect) effects.push_back(static_cast<int>(s));
  ASSERT_EQ(effects.size(), 2u);  // the forward pass and the recomputation
  for (int s : effects) {
    const Step& step = steps.steps()[static_cast<size_t>(s)];
    EXPECT_TRUE(step.outputs.empty());
    ASSERT_EQ(step.inputs.size(), 1u);
    EXPECT_GE(steps.layout().buffers[static_cast<size_t>(step.inputs[0])].last_step, s);
  }
  // The second run reads c recomputed in the backward pass, whose buffer is new there.
  EXPECT_NE(steps.steps()[static_cast<size_t>(effects[0])].inputs[0], steps.steps()[static_cast<size_t>(effects[1])].inputs[0]);
  EXPECT_EQ(build_memory_report(steps).steps[static_cast<size_t>(effects[1])].pass, Pass::kRecompute);
  // What c adds is alive at its print: the plan's peak is no lower than without the print.
  const StepProgram plain_steps = build_step_program(plain, reference, Pass::kBackward, InputMode::kLoadedEachRun);
  EXPECT_GE(steps.layout().arena_bytes, plain_steps.layout().arena_bytes);
  const Tensor x{Type{DType::kF32, {4}, MemorySpace::kDevice}, {0.5, -1.0, 2.0, 0.25}};
  const GradientResult a = run_gradient(printed, {}, {x}, reference), b = run_gradient(plain, {}, {x}, reference);
  EXPECT_EQ(a.outputs[0].data, b.outputs[0].data);
  EXPECT_EQ(a.gradients[0]->data, b.gradients[0]->data);
}

TEST(DebugPrint, InAScanBodyItRunsEachIteration) {
  const Linearization lin = linearize_with(parse_program(R"({ lambda ; a:f32[] xs:f32[3]. let
    c:f32[] ys:f32[3] = scan[jaxpr={ lambda ; h:f32[] x:f32[]. let
        y:f32[] = mul h x
        debug_callback[effect=Debug] y
        z:f32[] = sin y
      in (z, y) } length=3 linear=(False, False) num_carry=1 num_consts=0 reverse=False unroll=1] a xs
  in (c,) })", "p"));
  int forward_scans = 0;
  for (int e : lin.forward) {
    const FlatEquation& eqn = lin.graph.eqns[static_cast<size_t>(e)];
    if (!eqn.scan || eqn.part != ControlFlowPart::kForward) continue;
    ++forward_scans;
    const std::vector<int>& body = eqn.scan->forward_eqns;
    EXPECT_TRUE(runs(eqn.scan->body, body, Prim::kDebugCallback));  // its body's pass, once an iteration
  }
  EXPECT_EQ(forward_scans, 1);
}

}  // namespace
}  // namespace rematkit::testing
