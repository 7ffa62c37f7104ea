// JAX's policies: predicates on single equations, and their argument checks.
#include <gtest/gtest.h>

#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/autodiff/residual_report.hpp"
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

// x -> sin -> dot with W: the dot's output is what the offload policies decide on.
const char* kSinThenDot = R"({ lambda ; x:f32[4] w:f32[4,4]. let
    s:f32[4] = sin x
    y:f32[4] = dot_general[dimension_numbers=(([0], [0]), ([], []))] s w
    z:f32[4] = sin y
  in (z,) })";

TEST(Policies, OffloadableKeepsItsCopyWhereItsDestinationSays) {
  const Program program = parse_program(kSinThenDot, "p");
  auto dot_residual = [&](const std::string& spec) {
    const Linearization lin = linearize_with(program, spec);
    for (const Residual& r : lin.residuals)
      if (lin.graph.values[r.value].origin == ValueOrigin::kEquation &&
          lin.graph.eqns[lin.graph.values[r.value].producer].prim == Prim::kDotGeneral)
        return r.type;
    ADD_FAILURE() << spec << " kept no dot";
    return Type{};
  };
  EXPECT_EQ(dot_residual("offload_dot_with_no_batch_dims('device', 'pinned_host')").space, MemorySpace::kPinnedHost);
  // JAX's Offloadable(src='device', dst='device'): the copy stays on the device.
  EXPECT_EQ(dot_residual("offload_dot_with_no_batch_dims('device', 'device')").space, MemorySpace::kDevice);
  const Linearization lin = linearize_with(program, "offload_dot_with_no_batch_dims('device', 'pinned_host')");
  EXPECT_NE(format_residual_report(lin, true).find(
                "answered Offloadable(device to pinned_host) for dot_general in the checkpoint"),
            std::string::npos)
      << format_residual_report(lin, true);
}

TEST(Policies, AnOffloadFromWhereTheValueIsNotIsAnError) {
  // JAX asserts that an Offloadable's src is the memory the value lives in.
  try {
    linearize_with(parse_program(kSinThenDot, "p.jaxpr"), "offload_dot_with_no_batch_dims('pinned_host', 'device')");
    FAIL() << "an offload from pinned_host of a value computed on the device was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(std::string(e.what()),
              "p.jaxpr:3:16: policy offload_dot_with_no_batch_dims('pinned_host', 'device') offloads dot_general's output "
              "from pinned_host memory, but it is computed in device memory");
  }
}

TEST(Policies, StrengthIsKeptAndReported) {
  const Program program = parse_program(kSinThenDot, "p");
  for (const char* spec : {"save_cos_only", "prefer_saving_cos"}) {
    SCOPED_TRACE(spec);
    const Linearization lin = linearize_with(program, spec);
    const bool preferred = std::string(spec) == "prefer_saving_cos";
    int cosines = 0;
    for (size_t e = 0; e < lin.graph.eqns.size(); ++e) {
      if (lin.graph.eqns[e].prim != Prim::kCos || !lin.graph.is_known(lin.graph.eqns[e])) continue;
      ++cosines;
      EXPECT_EQ(lin.decisions[e].decision, Decision::kSaveable);
      EXPECT_EQ(lin.decisions[e].strength, preferred ? Strength::kPrefer : Strength::kMust);
    }
    EXPECT_EQ(cosines, 2);  // sin's JVP coefficients, one per sin
    const std::string report = format_residual_report(lin, true);
    EXPECT_EQ(report.find("answered Saveable (a preference) for cos") != std::string::npos, preferred) << report;
  }
}

}  // namespace
}  // namespace rematkit::testing
