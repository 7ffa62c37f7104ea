// Input of any depth is read up to the documented limits and refused past them with one line at
// its place (ir/nesting_limit.hpp); the passes bound programs built in C++ the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/ir/nesting_limit.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/ir/program_builder.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// `levels` programs, each but the innermost calling the next through `wrap` (its %s the callee).
std::string nested_programs(int levels, const std::string& wrap) {
  std::string program = "{ lambda ; c:f32[]. let d:f32[] = sin c in (d,) }";
  for (int i = 1; i < levels; ++i) {
    const size_t at = wrap.find("%s");
    program = wrap.substr(0, at) + program + wrap.substr(at + 2);
  }
  return program;
}

const char* const kPjit = "{ lambda ; c:f32[]. let d:f32[] = pjit[jaxpr=%s name=f] c in (d,) }";
const char* const kCheckpoint =
    "{ lambda ; c:f32[]. let d:f32[] = checkpoint[jaxpr=%s policy=None prevent_cse=True differentiated=False] c in "
    "(d,) }";
const char* const kScan =
    "{ lambda ; c:f32[]. let d:f32[] = scan[jaxpr=%s length=1 linear=(False,) num_carry=1 num_consts=0 "
    "reverse=False unroll=1 jaxpr_kind=None] c in (d,) }";
const char* const kCond =
    "{ lambda ; c:f32[]. let p:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c\n"
    "  d:f32[] = cond[branches=(%s { lambda ; e:f32[]. let  in (e,) })] p c in (d,) }";

// 1-based line and column of the n-th (1-based) occurrence of `needle` in `text`.
std::string place_of(const std::string& text, const std::string& needle, int n) {
  size_t at = std::string::npos;
  for (int i = 0; i < n; ++i) at = text.find(needle, at == std::string::npos ? 0 : at + 1);
  const size_t line_start = text.rfind('\n', at);
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
  const size_t column = line_start == std::string::npos ? at + 1 : at - line_start;
  return std::to_string(line) + ":" + std::to_string(column);
}

const BackendOptions kReference{{"reference"}, &default_plugins()};


TEST(NestingLimit, ProgramsAtTheLimitAreReadDifferentiatedAndRunEveryWay) {
  for (const char* wrap : {kPjit, kCheckpoint, kScan, kCond}) {
    SCOPED_TRACE(wrap);
    const Program p = parse_program(nested_programs(kMaxProgramNesting, wrap), "deep.jaxpr");
    const Linearization lin = linearize_with(p, "nothing_saveable");
    const Tensor x = Tensor::filled(Type{DType::kF32, {}, MemorySpace::kDevice}, 0.5);
    const GradientResult g = run_gradient(lin, {}, {x}, kReference);
    // Whatever wraps it, the program is sin: its gradient is cos.
    ASSERT_EQ(g.gradients.size(), 1u);
    ASSERT_TRUE(g.gradients[0]);
    EXPECT_NEAR(g.gradients[0]->data[0], std::cos(0.5), 1e-6);
    EXPECT_NEAR(evaluate_program(p, {}, {x}, Arithmetic::kFloat64)[0].data[0], std::sin(0.5), 1e-12);
    EXPECT_EQ(parse_program(print_program(p), "printed.jaxpr"), p);
  }
}

TEST(NestingLimit, OneProgramPastTheLimitIsRefusedAtItsOpeningBrace) {
  for (const char* wrap : {kPjit, kCheckpoint, kScan, kCond}) {
    SCOPED_TRACE(wrap);
    const std::string text = nested_programs(kMaxProgramNesting + 1, wrap);
    // The innermost program opens with the last "{ lambda" read in file order.
    const std::string expected = "deep.jaxpr:" + place_of(text, "{ lambda", kMaxProgramNesting + 1) +
                                 ": programs nested more than 128 deep (rematkit's limit, "
                                 "docs/program-format.md#limits)";
    EXPECT_EQ(usage_error([&] { parse_program(text, "deep.jaxpr"); }), expected);
    EXPECT_EQ(program_problems(text, "deep.jaxpr"), std::vector<std::string>{expected});
  }
}

// The three inputs that crashed the reader (issue 42), whatever their size.
TEST(NestingLimit, TheInputsThatOverflowedTheStackAreOneLineErrors) {
  const std::string braces = "{ lambda ; a:f32[]. let b:f32[] = checkpoint[jaxpr=" + repeat("{", 50000);
  // The 512 brackets before it: the main jaxpr's {, the params' [, and 510 of the run.
  EXPECT_EQ(usage_error([&] { parse_program(braces, "b.jaxpr"); }),
            "b.jaxpr:1:" + std::to_string(51 + 511) +
                ": brackets nested more than 512 deep (rematkit's limit, docs/program-format.md#limits)");

  const std::string unclosed =
      "{ lambda ; a:f32[]. let\n" + repeat("b:f32[] = checkpoint[jaxpr={ lambda ; c:f32[]. let\n", 20000);
  EXPECT_EQ(usage_error([&] { parse_program(unclosed, "u.jaxpr"); }),
            "u.jaxpr:" + place_of(unclosed, "{ lambda", 129) +
                ": programs nested more than 128 deep (rematkit's limit, docs/program-format.md#limits)");

  const std::string nots = repeat("not_(", 20000) + "dots_saveable" + repeat(")", 20000);
  EXPECT_EQ(usage_error([&] { parse_param_value(nots, "--retarget-policy"); }),
            "--retarget-policy:1:" + std::to_string(5 * 513) +
                ": brackets nested more than 512 deep (rematkit's limit, docs/program-format.md#limits)");
  EXPECT_NE(usage_error([&] { linearize_with(parse_program(nested_programs(2, kPjit), "p"), nots); })
                .find("brackets nested more than 512 deep"),
            std::string::npos);
}

TEST(NestingLimit, BracketsUpToTheLimitAreRead) {
  const std::string spec = repeat("not_(", kMaxBracketNesting) + "dots_saveable" + repeat(")", kMaxBracketNesting);
  const ParamValue v = parse_param_value(spec, "spec");
  int depth = 0;
  for (const ParamValue* p = &v; p->kind == ParamValue::Kind::kCall; p = &p->items.at(0)) ++depth;
  EXPECT_EQ(depth, kMaxBracketNesting);
}

// Shared sub-programs chain by name, with no brackets between them.
std::string shared_chain(int programs, int calls_per_level) {
  std::string text = "let f" + std::to_string(programs) + " = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in\n";
  for (int i = programs - 1; i >= 1; --i) {
    std::string body = "{ lambda ; a:f32[]. let";
    std::string operand = "a";
    for (int k = 0; k < calls_per_level; ++k) {
      body += " v" + std::to_string(k) + ":f32[] = pjit[jaxpr=f" + std::to_string(i + 1) + " name=g] " + operand + ";";
      operand = "v" + std::to_string(k);
    }
    text += "let f" + std::to_string(i) + " = " + body + " in (" + operand + ",) } in\n";
  }
  return text + "{ lambda ; a:f32[]. let b:f32[] = pjit[jaxpr=f1 name=g] a in (b,) }\n";
}

TEST(NestingLimit, SharedSubProgramsChainedByNameAreBoundedToo) {
  // The main program and 127 shared ones: 128 deep.
  const Program at_limit = parse_program(shared_chain(kMaxProgramNesting - 1, 1), "chain.jaxpr");
  EXPECT_NEAR(evaluate_program(at_limit, {}, {Tensor::filled(Type{DType::kF32, {}, MemorySpace::kDevice}, 0.5)},
                               Arithmetic::kFloat64)[0].data[0],
              std::sin(0.5), 1e-12);
  EXPECT_NE(usage_error([&] { parse_program(shared_chain(kMaxProgramNesting, 1), "chain.jaxpr"); })
                .find("programs nested more than 128 deep"),
            std::string::npos);
}

TEST(NestingLimit, SharedSubProgramsThatMultiplyAreRefusedBeforeTheyAreInlined) {
  // Two calls a level over 21 shared programs inline to 2^21 - 1 + ... equations, under 2^22: read.
  const Program under = parse_program(shared_chain(21, 2), "fine.jaxpr");
  EXPECT_EQ(under.eqns.size(), 1u);
  // Over 40 levels, 2^40: refused at the main program's call, without inlining it.
  const std::string text = shared_chain(40, 2);
  EXPECT_EQ(usage_error([&] { parse_program(text, "laughs.jaxpr"); }),
            "laughs.jaxpr:" + place_of(text, "pjit[jaxpr=f1 ", 1) +
                ": the program inlines to more than 4194304 equations: its shared sub-programs call each other too "
                "many times (rematkit's limit, docs/program-format.md#limits)");
}

// A problem in a shared sub-program called at three places is reported once, at its own place.
TEST(NestingLimit, AProblemInASharedSubProgramIsReportedOnceAtItsPlace) {
  const std::string text = "let f = { lambda ; a:f32[]. let b:f32[] = sin a; c:i32[] = cos b in (c,) } in\n"
                           "{ lambda ; x:f32[]. let\n"
                           "    y:i32[] = pjit[jaxpr=f name=g] x\n"
                           "    z:i32[] = pjit[jaxpr=f name=g] x\n"
                           "    w:i32[] = pjit[jaxpr=f name=g] x\n"
                           "  in (y, z, w) }\n";
  const std::vector<std::string> problems = program_problems(text, "shared.jaxpr");
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[0].rfind("shared.jaxpr:1:" + std::to_string(text.find("cos b") + 1) + ": cos", 0), 0u) << problems[0];
}

// A program built in C++ never meets the reader: each pass bounds its own recursion.
Program built_nested(int levels) {
  const Type f32{DType::kF32, {}, MemorySpace::kDevice};
  ProgramBuilder inner;
  Atom x = inner.argument("c", f32);
  Program p = inner.finish({inner.emit1(Prim::kSin, {x})});
  for (int i = 1; i < levels; ++i) {
    ProgramBuilder b;
    Atom a = b.argument("c", f32);
    p = b.finish(b.call(Prim::kPjit, std::move(p), {a}));
  }
  return p;
}

TEST(NestingLimit, EveryPassBoundsAProgramBuiltPastTheLimit) {
  const Program p = built_nested(kMaxProgramNesting + 1);
  const Tensor x = Tensor::filled(Type{DType::kF32, {}, MemorySpace::kDevice}, 0.5);
  for (const auto& [pass, work] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"linearize", [&] { linearize_with(p); }},
           {"the interpreter", [&] { evaluate_program(p, {}, {x}, Arithmetic::kFloat64); }},
           {"the printer", [&] { print_program(p); }},
       }) {
    EXPECT_EQ(usage_error(work), "<builder>:1: programs (in " + pass +
                                  ") nested more than 128 deep (rematkit's limit, docs/program-format.md#limits)");
  }
  // One level less runs.
  EXPECT_NEAR(run_gradient(linearize_with(built_nested(kMaxProgramNesting)), {}, {x}, kReference).gradients.at(0)->data[0],
              std::cos(0.5), 1e-6);
}

}  // namespace
}  // namespace rematkit::testing
