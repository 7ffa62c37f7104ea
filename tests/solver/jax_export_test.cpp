// The --export-jax file: JAX's names policy where checkpoint_name's names say the answer (it is
// what jax_remat3 reads), else the Python function policy and why names do not suffice. A names
// policy saves a `name` equation whose name it lists and recomputes every other equation
// (jax/_src/ad_checkpoint.py, SaveOnlyTheseNames, SaveAndOffloadOnlyTheseNames).
#include <gtest/gtest.h>

#include "rematkit/budget_solver.hpp"
#include "rematkit/ir/parser.hpp"

namespace rematkit {
namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

SolvedEquation value(const std::string& primitive, const std::string& signature, int line, Decision d, bool read = true) {
  SolvedEquation e;
  e.primitive = primitive;
  e.signature = signature;
  e.where = SourceLocation{"p.jaxpr", line, 5};
  e.site = std::to_string(line) + ":5#0";
  e.decision = d;
  e.read_by_backward = read;
  return e;
}

// A mul chain whose products are named a, b and c. mul's JVP reads its operands, so the backward
// pass reads the argument, a and b, and nothing reads c (reduce_sum's transpose broadcasts).
const char* kNamedMulChain = R"({ lambda ; x:f32[1024]. let
    a:f32[] = checkpoint[
      differentiated=False
      jaxpr={ lambda ; b:f32[1024]. let
          c:f32[1024] = mul b b
          d:f32[1024] = name[name=a] c
          e:f32[1024] = mul d d
          f:f32[1024] = name[name=b] e
          g:f32[1024] = mul f f
          h:f32[1024] = name[name=c] g
          i:f32[] = reduce_sum[axes=(0,)] h
        in (i,) }
      policy=nothing_saveable
      prevent_cse=True
    ] x
  in (a,) }
)";

TEST(JaxExport, AnAnswerThatKeepsOnlyNamedValuesIsSaveOnlyTheseNames) {
  // At a fraction's 1 the budget is everything_saveable's peak, which recomputes nothing: it is
  // the answer. The values it keeps that the backward pass reads are a and b (x is an argument).
  const Program p = parse_program(kNamedMulChain, "chain.jaxpr");
  BudgetOptions o;
  o.budget = parse_budget("1", "test");
  o.backends.preference = {"reference"};
  o.jax_signatures = true;
  const std::string py = jax_policy_python(solve_budget(p, o));
  EXPECT_TRUE(ends_with(py, "\nimport jax\n\npolicy = jax.checkpoint_policies.save_only_these_names(\"a\", \"b\")\n")) << py;
  EXPECT_EQ(py.find("def policy"), std::string::npos) << py;
}

TEST(JaxExport, OffloadedNamesUseTheSaveAndOffloadForm) {
  // 'b' twice, offloaded both times; 'a' saved; a saved unnamed value the backward pass never reads
  // and a recomputed one change nothing; 'z' is never read, so neither list has it.
  BudgetSolution s;
  s.equations = {value("sin", "sin f32[8]", 3, Decision::kSaveable, false),
                 value("name", "name f32[8] name=a", 4, Decision::kSaveable),
                 value("cos", "cos f32[8]", 5, Decision::kRecompute),
                 value("name", "name f32[8] name=b", 6, Decision::kOffloadable),
                 value("name", "name f32[4] name=b", 7, Decision::kOffloadable),
                 value("name", "name f32[4] name=z", 8, Decision::kSaveable, false)};
  const NamesPolicy names = names_policy_of(s);
  ASSERT_TRUE(names.sayable) << names.why_not;
  EXPECT_TRUE(ends_with(jax_policy_python(s),
                        "\nimport jax\n\n"
                        "policy = jax.checkpoint_policies.save_and_offload_only_these_names(\n"
                        "    names_which_can_be_saved=[\"a\"],\n"
                        "    names_which_can_be_offloaded=[\"b\"],\n"
                        "    offload_src=\"device\", offload_dst=\"pinned_host\")\n"))
      << jax_policy_python(s);
  // Nothing kept at all is nothing_saveable, which names say too.
  for (SolvedEquation& e : s.equations) e.decision = Decision::kRecompute;
  EXPECT_TRUE(ends_with(jax_policy_python(s), "policy = jax.checkpoint_policies.save_only_these_names()\n"));
}

TEST(JaxExport, WhereNamesDoNotSayTheAnswerTheFunctionPolicySaysWhy) {
  // A kept unnamed value the backward pass reads, and 'h' saved at line 4 but recomputed at line 6.
  BudgetSolution s;
  s.equations = {value("sin", "sin f32[8]", 3, Decision::kSaveable),
                 value("name", "name f32[8] name=h", 4, Decision::kSaveable),
                 value("name", "name f32[4] name=h", 6, Decision::kRecompute)};
  const NamesPolicy names = names_policy_of(s);
  EXPECT_FALSE(names.sayable);
  const std::string why =
      "the answer keeps 1 unnamed value: sin at 3:5; the values named 'h' are decided differently: saveable at 4:5, "
      "recompute at 6:5";
  EXPECT_EQ(names.why_not, why);
  const std::string py = jax_policy_python(s);
  EXPECT_NE(py.find("# Not a names policy: " + why + ".\n"), std::string::npos) << py;
  EXPECT_NE(py.find("# Under jax_remat3 (JAX 0.10.2 on) a Python function policy is not called"), std::string::npos);
  EXPECT_NE(py.find("def policy(prim, *avals, **params):"), std::string::npos) << py;
  EXPECT_EQ(py.find("import jax"), std::string::npos) << py;
  // Offloaded, it has no form at all: the refusal says why names do not say it.
  s.equations[0].decision = Decision::kOffloadable;
  try {
    jax_policy_python(s);
    ADD_FAILURE() << "an offloading answer names cannot say was exported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the answer keeps 1 unnamed value: sin at 3:5 (offloaded)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rematkit
