// The budget-policies plugin: solved('FILE') replays decisions by site, and knapsack_budget keeps
// what PyTorch's activation-memory budget would, worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit {
namespace {

// examples/two_layer.jaxpr: the checkpointed first layer is dot_general at 6:20 and sin at 7:20,
// whose JVP adds cos at 7:20 too, so their sites are 6:20#0, 7:20#0 and 7:20#1.
Program two_layer() {
  const std::string path = std::string(REMATKIT_EXAMPLES_DIR) + "/two_layer.jaxpr";
  return parse_program(testing::read_text(path), path);
}

std::vector<std::string> residuals_under(const Program& program, const std::string& policy) {
  LinearizeOptions o;
  o.policies = &default_plugins().policies();
  return residual_lines(linearize(retarget_checkpoint_policies(program, policy, "test"), o));
}

std::string decisions_file(const std::string& name, const std::string& decisions) {
  const std::string path = testing::temp_dir() + "/" + name;
  std::ofstream(path) << R"({"format": "rematkit-decisions/1", "match": "site", "decisions": [)" << decisions << "]}";
  return path;
}

TEST(SolvedPolicy, ReplaysDecisionsBySite) {
  const Program p = two_layer();
  const std::string dots = decisions_file("dots.json",
                                          R"({"site": "6:20#0", "primitive": "dot_general", "decision": "saveable"},
                                             {"site": "7:20#0", "primitive": "sin", "decision": "recompute"},
                                             {"site": "7:20#1", "primitive": "cos", "decision": "recompute"})");
  EXPECT_EQ(residuals_under(p, "solved('" + dots + "')"), residuals_under(p, "dots_saveable"));
  const std::string none = decisions_file("none.json",
                                          R"({"site": "6:20#0", "decision": "recompute"},
                                             {"site": "7:20#0", "decision": "recompute"},
                                             {"site": "7:20#1", "decision": "recompute"})");
  EXPECT_EQ(residuals_under(p, "solved('" + none + "')"), residuals_under(p, "nothing_saveable"));
  // Unlisted sites are saveable.
  EXPECT_EQ(residuals_under(p, "solved('" + decisions_file("empty.json", "") + "')"),
            residuals_under(p, "everything_saveable"));
}

TEST(SolvedPolicy, RefusesAnotherProgramsDecisionsAndBadFiles) {
  const Program p = two_layer();
  auto error_of = [&](const std::string& policy) -> std::string {
    try {
      residuals_under(p, policy);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      return e.what();
    }
    return "";
  };
  const std::string other = decisions_file("other.json", R"({"site": "6:20#0", "primitive": "sin", "decision": "saveable"})");
  EXPECT_NE(error_of("solved('" + other + "')").find("was solved for another program: its equation 6:20#0 is sin, here it is dot_general"),
            std::string::npos);
  EXPECT_NE(error_of("solved('/no/such/file.json')").find("cannot read decisions file '/no/such/file.json'"), std::string::npos);
  const std::string bad = testing::temp_dir() + "/bad.json";
  std::ofstream(bad) << R"({"format": "something-else"})";
  EXPECT_NE(error_of("solved('" + bad + "')").find("not a rematkit decisions file"), std::string::npos);
  const std::string word = decisions_file("word.json", R"({"site": "6:20#0", "decision": "maybe"})");
  EXPECT_NE(error_of("solved('" + word + "')").find("decision 'maybe' is not saveable, recompute or offloadable"),
            std::string::npos);
}

// W x, then sin, then sin * sin, in one checkpoint. Its policy is asked about four equations, each
// with a 64x64 f32 output (16 KiB): dot_general (2*64^3 = 524288 FLOPs), sin, its JVP's cos and
// mul (4096 FLOPs each). The budget's bytes are a fraction of their 64 KiB.
const char* kDotSinSquare =
    "{ lambda ; W:f32[64,64] x:f32[64,64]. let\n"
    "    y:f32[64,64] = checkpoint[policy=everything_saveable jaxpr={ lambda ; w:f32[64,64] v:f32[64,64]. let\n"
    "        a:f32[64,64] = dot_general[dimension_numbers=(([1], [0]), ([], []))] w v\n"
    "        b:f32[64,64] = sin a\n"
    "        c:f32[64,64] = mul b b\n"
    "      in (c,) }] W x\n"
    "  in (y,) }\n";

TEST(KnapsackBudget, KeepsTheMostFlopsThatFitItsShareOfTheBytes) {
  const Program p = parse_program(kDotSinSquare, "k.jaxpr");
  // A quarter: 16 KiB, one output; the dot's is worth the most FLOPs. The backward pass reads sin's
  // output (for mul) and cos (for sin): both recomputed from the kept dot.
  const std::vector<std::string> quarter = residuals_under(p, "knapsack_budget(0.25)");
  EXPECT_EQ(quarter, residuals_under(p, "dots_saveable"));
  EXPECT_NE(std::find(quarter.begin(), quarter.end(), "f32[64,64] output of dot_general from k.jaxpr:3"), quarter.end());
  // Nothing: the checkpoint's inputs only, as nothing_saveable.
  EXPECT_EQ(residuals_under(p, "knapsack_budget(0)"), residuals_under(p, "nothing_saveable"));
  // Everything fits at 1.
  EXPECT_EQ(residuals_under(p, "knapsack_budget(1)"), residuals_under(p, "everything_saveable"));
}

TEST(KnapsackBudget, RefusesAFractionOutsideZeroToOne) {
  const Program p = parse_program(kDotSinSquare, "k.jaxpr");
  for (const char* bad : {"knapsack_budget(1.5)", "knapsack_budget(-0.1)", "knapsack_budget('a')", "knapsack_budget()"}) {
    try {
      residuals_under(p, bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << bad;
    }
  }
}

}  // namespace
}  // namespace rematkit
