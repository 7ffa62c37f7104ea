// Forms older and newer JAX versions print (tests/data/jax-forms, docs/program-format.md's version
// table) read as the constructs rematkit has: what each one is read as, and what it keeps.
#include <gtest/gtest.h>

#include "rematkit/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

std::string form(const std::string& name) { return data_dir() + "/jax-forms/" + name; }

TEST(JaxVersionForms, XlaCallIsAJitCallOfItsCallJaxpr) {
  for (auto [file, line] : {std::pair{"xla_call_jax0_3.jaxpr", ":8"}, {"xla_call_jax0_2_22.jaxpr", ":9"}}) {
    const Program p = load_program(form(file));
    ASSERT_EQ(p.eqns.size(), 4u) << file;
    EXPECT_EQ(p.eqns[1].prim, Prim::kPjit) << file;
    EXPECT_EQ(p.eqns[1].params.find("name")->text, "inner") << file;
    ASSERT_NE(p.eqns[1].params.find("jaxpr"), nullptr) << file;
    EXPECT_EQ(p.eqns[1].params.find("donated_invars"), nullptr) << file;  // dropped, as pjit's
    // inner(a - 2, a) = a + a * ones(1): mul's tangent needs the broadcast ones (JAX's mul JVP),
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

}  // namespace
}  // namespace rematkit::testing
