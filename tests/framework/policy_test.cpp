// JAX's policies: predicates on single equations, and their argument checks.
#include <gtest/gtest.h>

#include "rematkit/primitive_params.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

PolicyAnswer ask(const std::string& spec, const std::string& prim, Params params = {}) {
  PolicyPtr p = test_policies().parse(spec, {});
  std::vector<Type> in{Type{}}, out{Type{}};
  return p->decide(EquationView{prim, params, in, out});
}

Params dims(bool batched) {
  DotDims d;
  d.lhs_contract = {1};
  d.rhs_contract = {0};
  if (batched) d.lhs_batch = d.rhs_batch = {0};
  return dot_general_params(d);
}

Params named(const std::string& name) {
  Params p;
  p.set("name", ParamValue::of_ident(name));
  return p;
}

TEST(Policies, DotPolicies) {
  EXPECT_EQ(ask("dots_saveable", "dot_general", dims(true)).decision, Decision::kSaveable);
  EXPECT_EQ(ask("dots_saveable", "sin").decision, Decision::kRecompute);
  EXPECT_EQ(ask("dots_with_no_batch_dims_saveable", "dot_general", dims(false)).decision, Decision::kSaveable);
  EXPECT_EQ(ask("dots_with_no_batch_dims_saveable", "dot_general", dims(true)).decision, Decision::kRecompute);
  PolicyAnswer off = ask("offload_dot_with_no_batch_dims('device', 'pinned_host')", "dot_general", dims(false));
  EXPECT_EQ(off.decision, Decision::kOffloadable);
  EXPECT_EQ(off.offload_dst, MemorySpace::kPinnedHost);
  EXPECT_EQ(ask("offload_dot_with_no_batch_dims('device', 'pinned_host')", "dot_general", dims(true)).decision,
            Decision::kRecompute);
}

TEST(Policies, NamePolicies) {
  EXPECT_EQ(ask("save_only_these_names('a')", "name", named("a")).decision, Decision::kSaveable);
  EXPECT_EQ(ask("save_only_these_names('a')", "name", named("b")).decision, Decision::kRecompute);
  EXPECT_EQ(ask("save_only_these_names('a')", "mul").decision, Decision::kRecompute);
  EXPECT_EQ(ask("save_any_names_but_these('a')", "name", named("b")).decision, Decision::kSaveable);
  EXPECT_EQ(ask("save_any_names_but_these('a')", "mul").decision, Decision::kRecompute);  // unnamed: never
  EXPECT_EQ(ask("save_anything_except_these_names('a')", "mul").decision, Decision::kSaveable);
  EXPECT_EQ(ask("save_anything_except_these_names('a')", "name", named("a")).decision, Decision::kRecompute);
  const std::string offload =
      "save_and_offload_only_these_names(names_which_can_be_saved=('s',), names_which_can_be_offloaded=['o'], "
      "offload_src='device', offload_dst='pinned_host')";
  EXPECT_EQ(ask(offload, "name", named("s")).decision, Decision::kSaveable);
  EXPECT_EQ(ask(offload, "name", named("o")).decision, Decision::kOffloadable);
  EXPECT_EQ(ask(offload, "name", named("x")).decision, Decision::kRecompute);
  EXPECT_EQ(ask("save_from_both_policies(dots_saveable, save_only_these_names('a'))", "name", named("a")).decision,
            Decision::kSaveable);
  EXPECT_EQ(ask("save_from_both_policies(dots_saveable, save_only_these_names('a'))", "sin").decision,
            Decision::kRecompute);
}

std::string error_of(const std::string& spec, const std::string& prim = "sin") {
  try {
    ask(spec, prim, dims(false));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "no error";
}

TEST(Policies, ArgumentErrors) {
  EXPECT_EQ(error_of("no_such_policy"), "<program>: unknown policy 'no_such_policy'");
  EXPECT_EQ(error_of("nothing_saveable(1)"), "<program>: nothing_saveable: takes no arguments");
  EXPECT_EQ(error_of("save_only_these_names(a)"),
            "<program>: save_only_these_names: unknown policy 'a' (write 'a' in quotes if it is a name)");
  EXPECT_EQ(error_of("save_only_these_names(1)"),
            "<program>: save_only_these_names: save_only_these_names' names must be strings, e.g. 'a'");
  EXPECT_EQ(error_of("save_and_offload_only_these_names(('a',), (), 'device', 'pinned_host')"),
            "<program>: save_and_offload_only_these_names: takes keyword arguments only (names_which_can_be_saved=..., ...)");
  EXPECT_EQ(error_of("save_and_offload_only_these_names(names_which_can_be_saved=('a', 'b'), "
                     "names_which_can_be_offloaded=('b',), offload_src='device', offload_dst='pinned_host')"),
            "<program>: save_and_offload_only_these_names: the names should be exclusive and should not intersect in "
            "names_which_can_be_saved and names_which_can_be_offloaded; the intersection is ('b',)");
  EXPECT_EQ(error_of("offload_dot_with_no_batch_dims('device', 'disk')"),
            "<program>: offload_dot_with_no_batch_dims: offload_dst must be 'device' or 'pinned_host', got 'disk'");
  EXPECT_EQ(error_of("save_from_both_policies(dots_saveable)"),
            "<program>: save_from_both_policies: takes two policies, e.g. save_from_both_policies(dots_saveable, "
            "nothing_saveable)");
  EXPECT_EQ(error_of("save_from_both_policies(dots_saveable, bogus)"),
            "<program>: save_from_both_policies: unknown policy 'bogus' (write 'bogus' in quotes if it is a name)");
  EXPECT_EQ(error_of("save_from_both_policies(dots_saveable, bogus())"),
            "<program>: save_from_both_policies: unknown policy 'bogus'");
  // JAX raises when a combined policy answers anything but a boolean.
  EXPECT_NE(error_of("save_from_both_policies(offload_dot_with_no_batch_dims('device', 'pinned_host'), nothing_saveable)",
                     "dot_general")
                .find("the return value of the policies should be a boolean"),
            std::string::npos);
}

}  // namespace
}  // namespace rematkit::testing
