// pure_callback and io_callback (jax/_src/callback.py): read in the forms JAX printed, typed by
// their result_avals, analysed as opaque host calls (residuals, memory plan), refused in one line
// where a gradient would go through them, or a run would call them.
#include <gtest/gtest.h>


#include "rematkit/ir/printer.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// b = sin a; c = the callback of the integer n; the sum of b * c. `params` is the callback's.
std::string program(const std::string& prim, const std::string& params, const std::string& operand = "n") {
  return "{ lambda ; a:f32[3] n:i32[3]. let\n"
         "    b:f32[3] = sin a\n"
         "    c:f32[3] = " + prim + "[\n" + params + "\n    ] " + operand + "\n"
         "    d:f32[3] = mul b c\n"
         "    e:f32[] = reduce_sum[axes=(0,)] d\n"
         "  in (e,) }\n";
}


// The params each version binds, printed sorted (callback.py at the tags named).
const std::pair<const char*, const char*> kForms[] = {
    {"pure_callback",  // 0.4.22-0.4.25: a closure, vectorized
     "callback=<function pure_callback.<locals>._flat_callback at 0x7f3a5c1d2e80>\n"
     "      result_avals=(ShapedArray(float32[3]),)\n      sharding=None\n      vectorized=False"},
    {"pure_callback",  // 0.4.26-0.4.34: a _FlatCallback, its PyTreeDef unreadable as a value
     "callback=_FlatCallback(callback_func=<function g at 0x7f1e2b3c4d50>, in_tree=PyTreeDef(((*,), {})))\n"
     "      result_avals=(ShapedArray(float32[3]),)\n      sharding=None\n      vectorized=False"},
    {"pure_callback",  // 0.4.35-0.5.3: vectorized deprecated beside vmap_method
     "callback=_FlatCallback(callback_func=<function g at 0x7f1e2b3c4d50>, in_tree=PyTreeDef(((*,), {})))\n"
     "      result_avals=(ShapedArray(float32[3]),)\n      sharding=None\n      vectorized=Deprecated\n"
     "      vmap_method=None"},
    {"pure_callback",  // 0.6.0 on
     "callback=_FlatCallback(callback_func=<function g at 0x7f1e2b3c4d50>, in_tree=PyTreeDef(((*,), {})))\n"
     "      result_avals=(ShapedArray(float32[3]),)\n      sharding=None\n      vmap_method=None"},
    {"io_callback",  // every version: ordered, no vmap method
     "callback=_FlatCallback(callback_func=<function h at 0x7f1e2b3c4d50>, in_tree=PyTreeDef(((*,), {})))\n"
     "      ordered=False\n      result_avals=(ShapedArray(float32[3], weak_type=True),)\n      sharding=None"},
};

TEST(HostCallback, EveryFormIsReadWithTheTypesItsResultAvalsGive) {
  for (const auto& [prim, params] : kForms) {
    SCOPED_TRACE(params);
    const Program p = parse_program(program(prim, params), "p");
    const Equation& call = p.eqns[1];
    EXPECT_EQ(call.prim, std::string(prim) == "io_callback" ? Prim::kIoCallback : Prim::kPureCallback);
    EXPECT_EQ(p.vars[static_cast<size_t>(call.outputs[0])].type.str(), "f32[3]");
    EXPECT_EQ(parse_program(print_program(p), "again"), p);  // result_avals print back as ((float32, (3,)),)
  }
  // A declared type the result_avals do not give is the verifier's error, as any other equation's.
  EXPECT_EQ(usage_error([] { parse_program(program("pure_callback", "result_avals=(ShapedArray(int32[3]),)"), "p"); }),
            "p:3:16: pure_callback of i32[3] computes i32[3] but 'c' is declared f32[3]");
}

TEST(HostCallback, ItsResultsAreKeptAsAnyValueTheBackwardPassReads) {
  // mul's transpose reads c for b's cotangent and sin's JVP needs cos a: both kept, in program order.
  const Program p = parse_program(program("pure_callback", "result_avals=(ShapedArray(float32[3]),)"), "p");
  const Linearization lin = linearize_with(p);
  EXPECT_EQ(residual_lines(lin),
            (std::vector<std::string>{"f32[3] output of cos from p:2", "f32[3] output of pure_callback from p:3"}));
  // Its step is planned with its result's buffer; running it is refused in one line.
  const BackendOptions reference{{"reference"}, &default_plugins()};
  const StepProgram steps = build_step_program(lin, reference, Pass::kBackward, InputMode::kLoadedEachRun);
  int calls = 0;
  for (const Step& step : steps.steps())
    if (step.kind == StepKind::kHostCall) {
      ++calls;
      EXPECT_EQ(step.outputs.size(), 1u);
      EXPECT_EQ(steps.buffer_type(step.outputs[0]).str(), "f32[3]");
    }
  EXPECT_EQ(calls, 1);
  const Tensor a{Type{DType::kF32, {3}, MemorySpace::kDevice}, {0.5, 1, 2}};
  const Tensor n{Type{DType::kI32, {3}, MemorySpace::kDevice}, {1, 2, 3}};
  EXPECT_EQ(usage_error([&] { run_gradient(lin, {}, {a, n}, reference); }),
            "p:3:16: cannot run pure_callback: it calls a Python function the program does not carry (residuals, "
            "memory and solve read it as an opaque host call)");
}

TEST(HostCallback, AGradientThroughOneIsRefusedAsJaxRefusesIt) {
  EXPECT_EQ(usage_error([] {
              linearize_with(parse_program(program("pure_callback", "result_avals=(ShapedArray(float32[3]),)", "b"), "p"));
            }),
            "p:3:16: Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking "
            "gradients. (jax/_src/callback.py: differentiate with --wrt around it)");
  EXPECT_EQ(usage_error([] {
              linearize_with(parse_program(program("io_callback", "ordered=False result_avals=(ShapedArray(float32[3]),)", "b"), "p"));
            }),
            "p:3:16: IO callbacks do not support JVP. (jax/_src/callback.py: differentiate with --wrt around it)");
  // An io_callback inside a checkpoint is refused even where no tangent reaches it (ad_checkpoint.py).
  const std::string inside = R"({ lambda ; a:f32[3] n:i32[3]. let
    b:f32[3] = checkpoint[jaxpr={ lambda ; c:f32[3] m:i32[3]. let
        d:f32[3] = io_callback[ordered=False result_avals=(ShapedArray(float32[3]),)] m
        e:f32[3] = mul c d
      in (e,) } policy=None prevent_cse=True differentiated=False] a n
  in (b,) })";
  EXPECT_EQ(usage_error([&] { linearize_with(parse_program(inside, "p")); }),
            "p:3:20: Effects not supported in AD of `checkpoint`/`remat`: [IO] (an io_callback inside a checkpoint, "
            "as jax/_src/ad_checkpoint.py refuses it)");
}

}  // namespace
}  // namespace rematkit::testing
