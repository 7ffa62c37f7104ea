// Forms older and newer JAX versions print (tests/data/jax-forms, docs/program-format.md's version
// table) read as the constructs rematkit has: what each one is read as, and what it keeps.
#include <gtest/gtest.h>

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

std::string form(const std::string& name) { return data_dir() + "/jax-forms/" + name; }

TEST(JaxVersionForms, EachJitFormIsAJitCallOfItsBody) {
  for (auto [file, line] : {std::pair{"xla_call_jax0_3.jaxpr", ":8"}, {"xla_call_jax0_2_22.jaxpr", ":9"},
                            {"pjit_jax0_4_13.jaxpr", ":8"}, {"jit_jax0_7.jaxpr", ":8"}}) {
    const Program p = load_program(form(file));
    ASSERT_GE(p.eqns.size(), 3u) << file;
    EXPECT_EQ(p.eqns[1].prim, Prim::kPjit) << file;
    EXPECT_EQ(p.eqns[1].params.find("name")->text, "inner") << file;
    ASSERT_NE(p.eqns[1].params.find("jaxpr"), nullptr) << file;
    EXPECT_EQ(p.eqns[1].params.find("donated_invars"), nullptr) << file;  // dropped, as pjit's
    // inner(a, a - 2) = (a - 2) + a * ones(1): mul's tangent needs the broadcast ones (JAX's mul JVP),
    // computed inside the jitted function.
    EXPECT_EQ(residual_lines(linearize_with(p)),
              (std::vector<std::string>{"f32[1] output of jitted function 'inner' from " + form(file) + line}));
  }
}

TEST(JaxVersionForms, RematCallIsACheckpointOfItsCallJaxpr) {
  const Program p = load_program(form("remat_call_jax0_3.jaxpr"));
  ASSERT_EQ(p.eqns.size(), 2u);
  EXPECT_EQ(p.eqns[0].prim, Prim::kCheckpoint);
  // policy=None saves nothing inside: the checkpoint keeps its argument, and the sin after it its cos.
  EXPECT_EQ(residual_lines(linearize_with(p)),
            (std::vector<std::string>{"f32[3] from the argument a",
                                      "f32[3] output of cos from " + form("remat_call_jax0_3.jaxpr") + ":13"}));
}

TEST(JaxVersionForms, RematCallKeepsItsPolicy) {
  // A policy prints as the function's repr (JAX 0.2.20 to 0.3.15): dots are saved, the sin recomputed.
  const Program p = parse_program(R"({ lambda ; a:f32[2,2] b:f32[2]. let
    c:f32[2] = remat_call[
      call_jaxpr={ lambda ; d:f32[2,2] e:f32[2]. let
          f:f32[2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=None] d e
          g:f32[2] = sin f
        in (g,) }
      concrete=False differentiated=False name=layer
      policy=<function checkpoint_dots at 0x7f3c2a1b5e50> prevent_cse=True
    ] a b
  in (c,) })", "p");
  // sin's tangent needs cos f: recomputed from the saved dot f, which mul's transpose does not need.
  EXPECT_EQ(residual_lines(linearize_with(p)),
            (std::vector<std::string>{"f32[2,2] from the argument a", "f32[2] from the argument b",
                                      "f32[2] output of dot_general from p:4"}));
}

TEST(JaxVersionForms, ShardedDimsAreReadAsTheWholeArrayWithTheAnnotationKept) {
  const Program p = load_program(form("sharded_types_jax0_5.jaxpr"));
  const Var& a = p.vars[p.invars[0]];
  EXPECT_EQ(a.type, (Type{DType::kF32, {8, 4}, MemorySpace::kDevice}));
  EXPECT_EQ(a.sharding, "f32[8@x,4]");
  EXPECT_EQ(p.vars[p.invars[2]].sharding, "f32[8@(x,y)]");
  EXPECT_EQ(p.vars[p.eqns[0].outputs[0]].type.shape, (Shape{8, 2}));
  EXPECT_EQ(p.vars[p.eqns[0].outputs[0]].sharding, "f32[8@x,2@y]");
  // The annotations print back, and the program reads back the same.
  const std::string printed = print_program(p);
  EXPECT_NE(printed.find("a:f32[8@x,4] b:f32[4,2@y] c:f32[8@(x,y)]."), std::string::npos) << printed;
  EXPECT_EQ(parse_program(printed, "printed"), p);
}

// The marks core.py's _vma_ur_str prints after a type, in each JAX version's form: each reads as
// the unsharded type, and the note keeps them (entries separated by ", ").
struct MarkedType {
  const char* written;
  const char* kept;
};

class MarkedTypeTest : public ::testing::TestWithParam<MarkedType> {};

TEST_P(MarkedTypeTest, ReadsAsTheUnshardedType) {
  const std::string text = std::string("{ lambda ; a:") + GetParam().written + ". let b:f32[2,4] = sin a in (b,) }";
  const Program p = parse_program(text, "p");
  const Var& a = p.vars[p.invars[0]];
  EXPECT_EQ(a.type, (Type{DType::kF32, {2, 4}, GetParam().written[3] == '<' ? MemorySpace::kPinnedHost : MemorySpace::kDevice}));
  EXPECT_EQ(a.sharding, GetParam().kept);
  EXPECT_EQ(p.vars[p.eqns[0].outputs[0]].sharding, "");
}

INSTANTIATE_TEST_SUITE_P(
    EachJaxVersion, MarkedTypeTest,
    ::testing::Values(MarkedType{"f32[2,4]{V:c, U:a, R:b}", "f32[2,4]{V:c, U:a, R:b}"},  // 0.8.1 on
                      MarkedType{"f32[2,4]{V:(i,j)}", "f32[2,4]{V:(i,j)}"},
                      MarkedType{"f32[2@x,4]{U_max:y}", "f32[2@x,4]{U_max:y}"},          // after 0.11.0
                      MarkedType{"f32[2,4]{U:x, R:y}{i}", "f32[2,4]{U:x, R:y}{i}"},      // 0.7.0-0.8.0
                      MarkedType{"f32[2,4]{(i,j)}", "f32[2,4]{(i,j)}"},
                      MarkedType{"f32[2,4]{i,j}", "f32[2,4]{i, j}"},                      // 0.6.0
                      MarkedType{"f32[2@x,4]{U:x, A:y, C:z}", "f32[2@x,4]{U:x, A:y, C:z}"},  // 0.4.36-0.4.38
                      MarkedType{"f32<host>[2@x,4]{V:i}", "f32<host>[2@x,4]{V:i}"}));

TEST(JaxVersionForms, UntypedFormTakesArgumentTypesAndTypesEachEquation) {
  const std::string path = form("untyped_jax0_2_0.jaxpr");
  const ArgTypes args = parse_arg_types("a:f32[8], b:f32[8]", "--arg-types");
  const Program p = parse_program(read_text(path), path, args);
  ASSERT_EQ(p.eqns.size(), 4u);
  const Type vector{DType::kF32, {8}, MemorySpace::kDevice};
  EXPECT_EQ(p.vars[p.eqns[0].outputs[0]].type, vector);  // c = sin b
  EXPECT_EQ(p.eqns[1].inputs[1].type, (Type{DType::kF32, {}, MemorySpace::kDevice}));  // 3.0 takes c's dtype
  EXPECT_EQ(p.vars[p.eqns[3].outputs[0]].type, (Type{DType::kF32, {}, MemorySpace::kDevice}));  // reduce_sum
  // sum(a + 3 sin b): sin's tangent needs cos b, and nothing else is kept.
  EXPECT_EQ(residual_lines(linearize_with(p)), (std::vector<std::string>{"f32[8] output of cos from " + path + ":7"}));
  // Without the types: one line naming the binder and how to give its type.
  try {
    parse_program(read_text(path), path);
    ADD_FAILURE() << "read without argument types";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ":6:13: binder 'a' has no type (JAX before 0.2.22 printed none): give it "
                                            "with --arg-types a:f32[3],... or write it as a:f32[...]");
  }
}

TEST(JaxVersionForms, UntypedCallBodyTakesItsOperandsTypes) {
  const std::string path = form("xla_call_untyped_jax0_2_0.jaxpr");
  const Program p = parse_program(read_text(path), path, parse_arg_types("a:f32[]", "--arg-types"));
  ASSERT_EQ(p.eqns.size(), 3u);
  EXPECT_EQ(p.eqns[1].prim, Prim::kPjit);
  const Program& body = *p.eqns[1].body();
  EXPECT_EQ(body.vars[body.invars[1]].type, (Type{DType::kF32, {}, MemorySpace::kDevice}));
  EXPECT_EQ(p.vars[p.eqns[1].outputs[0]].type.shape, (Shape{1}));  // the body's e = b + a * ones(1)
  EXPECT_EQ(p.vars[p.eqns[2].outputs[0]].type.shape, (Shape{1}));
}

TEST(JaxVersionForms, AProblemInAnUntypedBodyIsReportedOnceAndReadingGoesOn) {
  const std::string text = "{ lambda  ; a.\n  let b = xla_call[ call_jaxpr={ lambda  ; c.\n                             let d = frob c\n"
                           "                             in (d,) }\n                  name=f ] a\n      e = cosh a\n  in (e,) }";
  EXPECT_EQ(program_problems(text, "p", parse_arg_types("a:f32[]", "--arg-types")),
            (std::vector<std::string>{"p:3:38: unknown primitive 'frob'", "p:6:11: unknown primitive 'cosh'"}));
}

// Worked by hand: neg's typed output makes a f32[3] (its operand's type), and then select_n's cases
// make b a's type, though b's use comes first: the second reading starts from a's type.
constexpr const char* kInferable =
    "{ lambda  ; a b.\n"
    "  let c = select_n True b a\n"
    "      d:f32[3] = neg a\n"
    "  in (c, d) }";

std::string reading_error(const std::string& text, const std::string& arg_types) {
  try {
    parse_program(text, "p", parse_arg_types(arg_types, "--arg-types"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JaxVersionForms, UntypedArgumentsTakeTheTypesTheirUsesDetermine) {
  const Program p = parse_program(kInferable, "p");
  const Type vector{DType::kF32, {3}, MemorySpace::kDevice};
  EXPECT_EQ(p.vars[p.invars[0]].type, vector);
  EXPECT_EQ(p.vars[p.invars[1]].type, vector);
  EXPECT_EQ(p.vars[p.eqns[0].outputs[0]].type, vector);
  EXPECT_TRUE(program_problems(kInferable, "p").empty());
}

TEST(JaxVersionForms, AnArgumentNoUseDeterminesIsRefusedByName) {
  // a is f32[3] from neg; add leaves b f32[3], f32[1] or f32[] (scalars and 1-sized axes broadcast).
  EXPECT_EQ(reading_error("{ lambda  ; a b.\n  let c = add b a\n      d:f32[3] = neg a\n  in (c, d) }", ""),
            "p:1:15: binder 'b' has no type (JAX before 0.2.22 printed none): give it with --arg-types b:f32[3],... "
            "or write it as b:f32[...]");
  EXPECT_EQ(reading_error("{ lambda  ; a b.\n  let c = add b a\n      d:f32[3] = neg a\n  in (c, d) }", "b:f32[]"), "");
}

TEST(JaxVersionForms, GivenArgumentTypesWinAndMustAgreeWithTheirUses) {
  // a given f32[4] makes b f32[4] by select_n; neg's output says f32[3]: refused at a's binder.
  EXPECT_EQ(reading_error(kInferable, "a:f32[4]"),
            "p:1:13: binder 'a' is f32[4] (given by --arg-types), but its use by neg at 3:18 makes it f32[3]");
  EXPECT_EQ(reading_error(kInferable, "b:f32[3]"), "");
  EXPECT_EQ(reading_error(kInferable, "b:i32[3]"),
            "p:1:13: binder 'a' is i32[3] (inferred), but its use by neg at 3:18 makes it f32[3]");
}

TEST(JaxVersionForms, ArgumentTypesAreCheckedAgainstTheProgram) {
  const std::string text = "{ lambda  ; a.\n  let b = sin a\n  in (b,) }";
  auto error_of = [&](const std::string& arg_types) {
    try {
      parse_program(text, "p", parse_arg_types(arg_types, "--arg-types"));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of("a:f32[2],z:f32[]"), "--arg-types gives a type to 'z', which is not an untyped binder of the main jaxpr");
  EXPECT_EQ(error_of("a:f32[2],b"), "--arg-types:1:11: expected ':', found end of file");
  EXPECT_EQ(error_of("a:f32[2],a:f32[]"), "--arg-types:1:10: 'a' is given twice");
  EXPECT_EQ(error_of("a:f33[2]"), "--arg-types:1:3: unknown dtype 'f33'");
  EXPECT_EQ(error_of("a:f32[2]"), "");
}

TEST(JaxVersionForms, BroadcastInDimTakesItsShapeFromTheBinder) {
  const Program p = load_program(form("broadcast_in_dim_jax0_9_1.jaxpr"));
  EXPECT_EQ(p.eqns[0].params.find("shape")->str(), "(2, 3)");
  EXPECT_EQ(p.eqns[0].params.find("broadcast_dimensions")->str(), "(1,)");
  EXPECT_EQ(p.eqns[1].params.find("shape")->str(), "(2, 3)");
  EXPECT_EQ(p.eqns[1].params.find("broadcast_dimensions")->str(), "()");
}

TEST(JaxVersionForms, EachScanFormGivesTheSameLoop) {
  // func11: one const (extra), one carry, two xs of 16 steps, whatever params the version prints.
  for (const char* file : {"scan_jax0_4_13.jaxpr", "scan_jax0_4_26.jaxpr", "scan_jax0_10.jaxpr", "scan_jax0_11.jaxpr"}) {
    const Program p = load_program(form(file));
    ASSERT_EQ(p.eqns.size(), 2u) << file;
    ASSERT_EQ(p.eqns[1].prim, Prim::kScan) << file;
    const ScanParams scan = scan_params(p.eqns[1].params, p.eqns[1].where);
    EXPECT_EQ(scan.length, 16) << file;
    EXPECT_EQ(scan.num_consts, 1u) << file;
    EXPECT_EQ(scan.num_carry, 1u) << file;
    EXPECT_FALSE(scan.reverse) << file;
    EXPECT_EQ(scan.body->eqns.size(), 5u) << file;
  }
}

// jax_remat3 (JAX 0.10.2 on): call_hi_primitive of RematTraced is a checkpoint of its 'jaxpr', and
// CheckpointName a name. Each expectation is what JAX's rules keep: the checkpoint's inputs, plus the
// values its policy saves that the backward pass reads.
TEST(JaxVersionForms, Remat3RematTracedIsACheckpoint) {
  const std::string path = form("remat3_jax0_11.jaxpr");
  const Program p = load_program(path);
  ASSERT_EQ(p.eqns.size(), 2u);
  EXPECT_EQ(p.eqns[0].prim, Prim::kCheckpoint);
  EXPECT_EQ(p.eqns[0].params.find("policy")->kind, ParamValue::Kind::kNone);
  // policy None (nothing_saveable): the checkpoint keeps its argument a, recomputing both sins; the
  // sin after it needs cos b (sin's JVP).
  EXPECT_EQ(residual_lines(linearize_with(p)),
            (std::vector<std::string>{"f32[3] from the argument a", "f32[3] output of cos from " + path + ":9"}));
}

TEST(JaxVersionForms, Remat3DotsSaveableKeepsTheDotAndTheInputs) {
  const std::string path = form("remat3_dots_jax0_11_1.jaxpr");
  const Program p = load_program(path);
  ASSERT_EQ(p.eqns.size(), 1u);
  EXPECT_EQ(p.eqns[0].prim, Prim::kCheckpoint);
  EXPECT_EQ(p.eqns[0].inputs.size(), 2u);  // the closed-over constant first, as the inner binders
  // e = sin(a @ b) * b: mul's transpose needs sin c (recomputed from c) and b; sin's JVP cos c
  // (recomputed); the dot's transpose a. DotsSaveable saves c (_dot_general_remat); the inputs a
  // (a constant) and b are the checkpoint's.
  EXPECT_EQ(residual_lines(linearize_with(p)),
            (std::vector<std::string>{"f32[4,4] from a constant", "f32[4] from the argument b",
                                      "f32[4] output of dot_general from " + path + ":11"}));
}

TEST(JaxVersionForms, Remat3SaveOnlyTheseNamesKeepsTheCheckpointName) {
  const std::string path = form("remat3_names_jax0_11_1.jaxpr");
  const Program p = load_program(path);
  ASSERT_EQ(p.eqns.size(), 1u);
  const Program& body = *p.eqns[0].params.find("jaxpr")->program;
  ASSERT_EQ(body.eqns.size(), 3u);
  EXPECT_EQ(body.eqns[1].prim, Prim::kName);
  EXPECT_EQ(body.eqns[1].params.find("name")->text, "y");
  // d = sin(sin a) with c = sin a named y: y is saved (CheckpointName.remat), so the outer sin's cos c
  // is recomputed from it; the inner sin's cos a from the checkpoint's input a.
  EXPECT_EQ(residual_lines(linearize_with(p)),
            (std::vector<std::string>{"f32[3] from the argument a", "f32[3] named 'y' from " + path + ":10"}));
}

// A function policy under remat3 is never called: everything_saveable saves the named values only
// (CheckpointName.remat's `policy is everything_saveable`), any other callable nothing.
TEST(JaxVersionForms, Remat3FunctionPolicies) {
  auto program = [](const std::string& policy) {
    return parse_program("{ lambda ; a:f32[3]. let\n    b:f32[3] = call_hi_primitive[\n"
                         "      _prim=RematTraced[{'jaxpr': { lambda ; a:f32[3]. let\n"
                         "    b:f32[3] = sin a\n"
                         "    c:f32[3] = call_hi_primitive[_prim=CheckpointName[{'name': 'y'}]] b\n"
                         "    d:f32[3] = sin c\n"
                         "  in (d,) }, 'policy': " + policy + ", 'prevent_cse': True}]\n    ] a\n  in (b,) }",
                         "p");
  };
  // As save_only_these_names('y') above: the argument and y.
  EXPECT_EQ(residual_lines(linearize_with(program("<function everything_saveable at 0xXXXXXXXXXXXX>"))),
            (std::vector<std::string>{"f32[3] from the argument a", "f32[3] named 'y' from p:5"}));
  // The callable JAX never calls is kept for the note `check` and `residuals` print.
  EXPECT_EQ(program("<function everything_saveable at 0xXXXXXXXXXXXX>").eqns[0].params.find("ignored_callable_policy"),
            nullptr);
  const Program lambda = program("<function f.<locals>.<lambda> at 0xXXXXXXXXXXXX>");
  const ParamValue* ignored = lambda.eqns[0].params.find("ignored_callable_policy");
  ASSERT_NE(ignored, nullptr);
  EXPECT_EQ(ignored->text, "f.<locals>.<lambda>");
  // Full remat: only the argument.
  EXPECT_EQ(residual_lines(linearize_with(program("<function f.<locals>.<lambda> at 0xXXXXXXXXXXXX>"))),
            (std::vector<std::string>{"f32[3] from the argument a"}));
}

// remat3's DotsSaveable(False) is read by dot_general's remat rule alone (lax.py's _dot_general_remat
// at cec06d1; convolution.py has no remat rule), so a convolution's output is recomputed, where
// remat2 calls DotsSaveable(False), which saves conv_general_dilated too (ad_checkpoint.py L92).
TEST(JaxVersionForms, Remat3DotsSaveableRecomputesAConvolution) {
  const std::string conv =
      "    c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers("
      "lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 "
      "lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None "
      "rhs_dilation=(1, 1) window_strides=(1, 1)] a w\n"
      "    d:f32[1,4,4,3] = sin c\n  in (d,) }";
  const std::string header = "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let\n";
  const std::string remat2 = header + "    b:f32[1,4,4,3] = checkpoint[jaxpr=" + header + conv +
                             " policy=DotsSaveable(only_if_no_batch_dims=False) prevent_cse=True] a w\n  in (b,) }";
  const std::string remat3 = header + "    b:f32[1,4,4,3] = call_hi_primitive[_prim=RematTraced[{'jaxpr': " + header +
                             conv + ", 'policy': DotsSaveable(only_if_no_batch_dims=False), 'prevent_cse': True}]] a w\n"
                             "  in (b,) }";
  // The conv's transpose reads a and w (the checkpoint's arguments); sin's JVP cos c, recomputed from c.
  EXPECT_EQ(residual_lines(linearize_with(parse_program(remat2, "p"))),
            (std::vector<std::string>{"f32[1,4,4,2] from the argument a", "f32[3,3,2,3] from the argument w",
                                      "f32[1,4,4,3] output of conv_general_dilated from p:3"}));
  EXPECT_EQ(residual_lines(linearize_with(parse_program(remat3, "p"))),
            (std::vector<std::string>{"f32[1,4,4,2] from the argument a", "f32[3,3,2,3] from the argument w"}));
}

// checkpoint_name outside a checkpoint is a name: plain autodiff keeps what the backward reads.
TEST(JaxVersionForms, Remat3CheckpointNameOutsideACheckpoint) {
  const Program p = parse_program("{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n"
                                  "    c:f32[3] = call_hi_primitive[_prim=CheckpointName[{'name': 'y'}]] b\n"
                                  "    d:f32[3] = sin c\n  in (d,) }", "p");
  ASSERT_EQ(p.eqns.size(), 3u);
  EXPECT_EQ(p.eqns[1].prim, Prim::kName);
  // The two sins' cosines, which their JVPs compute.
  EXPECT_EQ(residual_lines(linearize_with(p)),
            (std::vector<std::string>{"f32[3] output of cos from p:2", "f32[3] output of cos from p:4"}));
}

// fft_type as an enum's name (to 0.4.34) and as its value (from 0.4.35) is one transform; the complex
// literal is c64 (1+2j), untyped or typed. Residuals: mul by a literal keeps nothing, sin its cos,
// and in the newer form k * l keeps both parts (each the other's coefficient).
TEST(JaxVersionForms, FftTypeByNameOrValueIsOneTransform) {
  for (const char* file : {"fft_jax0_4_30.jaxpr", "fft_jax0_7.jaxpr"}) {
    SCOPED_TRACE(file);
    const Program p = load_program(form(file));
    const Program* rfft = p.eqns[0].body();
    ASSERT_NE(rfft, nullptr);
    EXPECT_EQ(fft_kind(rfft->eqns[0].params, {}), FftKind::kRfft);
    EXPECT_EQ(fft_kind(p.eqns[2].body()->eqns[0].params, {}), FftKind::kIrfft);
    const Atom& literal = p.eqns[1].inputs[1];
    EXPECT_EQ(literal.type.dtype, DType::kC64);
    EXPECT_EQ(literal.literal, 1);
    EXPECT_EQ(literal.literal_imag, 2);
  }
  EXPECT_EQ(residual_lines(linearize_with(load_program(form("fft_jax0_4_30.jaxpr")))),
            (std::vector<std::string>{"f32[8] output of cos from " + form("fft_jax0_4_30.jaxpr") + ":20"}));
  EXPECT_EQ(residual_lines(linearize_with(load_program(form("fft_jax0_7.jaxpr")))),
            (std::vector<std::string>{"f32[8] output of cos from " + form("fft_jax0_7.jaxpr") + ":19",
                                      "f32[5] output of real from " + form("fft_jax0_7.jaxpr") + ":21",
                                      "f32[5] output of imag from " + form("fft_jax0_7.jaxpr") + ":22"}));
}

// Refs read and written whole, in the forms before 0.8.0 ('[:,:]', '[]', mutable_array) and after
// ('[...]', new_ref): the pure program's residuals by hand. In each, f = e * b with e the ref's value
// after the accumulation keeps b and that add; sin keeps its cos, tanh its answer and 1 - answer.
TEST(JaxVersionForms, RefsReadWholeAreTheirValues) {
  const std::string old_form = form("mutable_array_jax0_6.jaxpr"), new_form = form("new_ref_jax0_8.jaxpr");
  EXPECT_EQ(residual_lines(linearize_with(load_program(old_form))),
            (std::vector<std::string>{"f32[2,3] from the argument b", "f32[2,3] output of cos from " + old_form + ":9",
                                      "f32[2,3] output of add from " + old_form + ":11"}));
  EXPECT_EQ(residual_lines(linearize_with(load_program(new_form))),
            (std::vector<std::string>{"f32[4] from the argument b", "f32[4] output of tanh from " + new_form + ":7",
                                      "f32[4] output of sub from " + new_form + ":7",
                                      "f32[4] output of add from " + new_form + ":8"}));
}

}  // namespace
}  // namespace rematkit::testing
