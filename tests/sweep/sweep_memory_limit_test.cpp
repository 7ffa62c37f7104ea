// A sweep under a memory limit: a configuration whose step is over it fails alone, its row says
// why, and the others run as they would without the limit.
#include <gtest/gtest.h>

#include <fstream>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_output.hpp"
#include "rematkit/sweep/sweep_runner.hpp"
#include "rematkit/sweep/sweep_table.hpp"
#include "support/test_support.hpp"

namespace rematkit::sweep {
namespace {

const char* kTwoPolicies = R"yaml(models:
  - name: mlp
    mlp: {input: 32, widths: [64, 64, 64, 64], batch: 128, activation: tanh, remat: per_layer}
policies: [nothing_saveable, everything_saveable]
backends: [reference]
repetitions: 2
)yaml";

TEST(SweepMemoryLimit, AConfigurationOverTheLimitFailsAloneAndSaysWhy) {
  SweepConfig config = parse_sweep(kTwoPolicies, "two.yaml");
  const std::vector<SweepRow> free = run_sweep(config, default_plugins()).rows;
  ASSERT_EQ(free.size(), 2u);
  const int64_t nothing = free[0].predicted_peak[0], everything = free[1].predicted_peak[0];
  // Saving nothing per layer keeps less alive at the peak than saving everything.
  ASSERT_LT(nothing, everything);

  config.max_memory = (nothing + everything) / 2;
  const std::vector<SweepRow> limited = run_sweep(config, default_plugins()).rows;
  ASSERT_EQ(limited.size(), 2u);
  EXPECT_EQ(limited[0].failure, "");
  EXPECT_EQ(limited[0].predicted_peak, free[0].predicted_peak);
  EXPECT_EQ(limited[0].measured_peak, limited[0].predicted_peak);
  EXPECT_GT(limited[0].median_ms, 0);
  EXPECT_EQ(limited[0].max_grad_diff, 0.0);
  EXPECT_EQ(limited[0].versus_baseline, "");  // its baseline did not run
  EXPECT_EQ(limited[1].policy, "everything_saveable");
  EXPECT_NE(limited[1].failure.find("the step's predicted peak of "), std::string::npos) << limited[1].failure;
  EXPECT_NE(limited[1].failure.find("(" + std::to_string(everything) + " bytes) is over the memory limit of "),
            std::string::npos)
      << limited[1].failure;
  EXPECT_EQ(limited[1].predicted_peak[0], everything);
  EXPECT_EQ(limited[1].median_ms, 0);
  EXPECT_TRUE(limited[1].samples_ms.empty());

  // The table shows the row that ran and names the one that did not; the files keep both.
  const std::string table = format_table(limited);
  EXPECT_NE(table.find("config 2 (everything_saveable; mlp on reference, 1 thread) did not run: the step's"),
            std::string::npos)
      << table;
  const std::string csv = format_csv(limited);
  EXPECT_NE(csv.find(",failure"), std::string::npos);
  EXPECT_NE(csv.find("is over the memory limit"), std::string::npos);
  const std::vector<SweepRow> read_back = parse_json_rows(format_json(limited), "limited.json");
  EXPECT_EQ(read_back[1].failure, limited[1].failure);
  EXPECT_EQ(read_back[0].failure, "");
}

// Steps that fit the limit alone but not together run one after another: every row runs, each
// checked against the baseline's gradients (kept while the others run) and timed alone; its rows
// and the table say so.
TEST(SweepMemoryLimit, StepsThatDoNotFitTogetherRunOneAfterAnother) {
  std::string yaml = kTwoPolicies;
  yaml.replace(yaml.find("batch: 128"), 10, "batch: 16");  // three sweeps: a small one
  SweepConfig config = parse_sweep(yaml, "two.yaml");
  const std::vector<SweepRow> free = run_sweep(config, default_plugins()).rows;
  ASSERT_EQ(free.size(), 2u);
  for (const SweepRow& r : free) EXPECT_FALSE(r.timed_alone) << r.policy;
  const int64_t nothing = free[0].predicted_peak[0], everything = free[1].predicted_peak[0];

  config.max_memory = everything + nothing / 2;  // either alone, not both
  const std::vector<SweepRow> alone = run_sweep(config, default_plugins()).rows;
  ASSERT_EQ(alone.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(alone[i].policy);
    EXPECT_EQ(alone[i].failure, "");
    EXPECT_TRUE(alone[i].timed_alone);
    EXPECT_EQ(alone[i].predicted_peak, free[i].predicted_peak);
    EXPECT_EQ(alone[i].measured_peak, alone[i].predicted_peak);
    EXPECT_EQ(alone[i].samples_ms.size(), 2u);
    EXPECT_EQ(alone[i].max_grad_diff, 0.0);
  }
  EXPECT_NE(alone[0].versus_baseline, "");  // the baseline ran first, and its interval is there
  EXPECT_NE(format_table(alone).find("timed alone: the group's steps do not fit the memory limit together"), std::string::npos);
  EXPECT_TRUE(parse_json_rows(format_json(alone), "alone.json")[0].timed_alone);

  config.max_memory = everything + nothing;  // both together: interleaved as ever
  for (const SweepRow& r : run_sweep(config, default_plugins()).rows) EXPECT_FALSE(r.timed_alone) << r.policy;
}

TEST(SweepMemoryLimit, AModelWhoseInputsCannotFitFailsWithoutStoppingTheSweep) {
  // 1e12 f32 arguments, drawn as doubles: 8 TB. Its step's plan, made from the program alone, is
  // refused, and nothing is drawn. The MLP after it runs.
  const std::string program = testing::temp_dir() + "/huge.jaxpr";
  std::ofstream(program) << "{ lambda ; a:f32[1000000,1000000]. let\n"
                            "    b:f32[1000000,1000000] = sin a\n"
                            "    c:f32[] = reduce_sum[axes=(0, 1)] b\n"
                            "  in (c,) }\n";
  const std::string yaml = "models:\n  - name: huge\n    program: {file: " + program +
                           "}\n  - name: small\n    mlp: {input: 3, widths: [2], batch: 2}\n"
                           "policies: [nothing_saveable]\nbackends: [reference]\nrepetitions: 1\n";
  const SweepResult result = run_sweep(parse_sweep(yaml, "huge.yaml"), default_plugins());
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(result.rows[0].model, "huge");
  EXPECT_NE(result.rows[0].failure.find("the step's predicted peak of "), std::string::npos) << result.rows[0].failure;
  EXPECT_NE(result.rows[0].failure.find("is over the memory limit of "), std::string::npos) << result.rows[0].failure;
  EXPECT_EQ(result.rows[1].model, "small");
  EXPECT_EQ(result.rows[1].failure, "");
  EXPECT_GT(result.rows[1].median_ms, 0);
}

TEST(SweepMemoryLimit, TheLimitIsASizeInTheSweepFile) {
  const std::string head = "models:\n  - mlp: {input: 3, widths: [2]}\npolicies: [nothing_saveable]\nbackends: [reference]\n";
  EXPECT_EQ(parse_sweep(head + "max_memory: 512MiB\n", "m.yaml").max_memory, int64_t{512} << 20);
  EXPECT_FALSE(parse_sweep(head, "m.yaml").max_memory.has_value());
  try {
    parse_sweep(head + "max_memory: lots\n", "m.yaml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "m.yaml:5:13: max_memory must be a size in bytes, such as 8GiB or 512MiB");
  }
}

}  // namespace
}  // namespace rematkit::sweep
