// Sweep files: every field of a row survives JSON (sweep-merge re-reads shards' JSON), the samples
// are one CSV cell, and a JSON file from before the timing fields still reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "rematkit/ir/error.hpp"
#include "rematkit/sweep/sweep_output.hpp"

namespace rematkit::sweep {
namespace {

// A row with every field written to the files set, each to its own value; numbers with at most
// four decimals (the files write times with four) or exact powers of two.
SweepRow every_field_set() {
  SweepRow r;
  r.config = 7;
  r.grid_size = 180;
  r.model = "gpt-small";
  r.policy = "offload_dot_with_no_batch_dims('device', \"pinned_host\")";  // commas and quotes
  r.backend = "onednn,highway,reference";
  r.threads = 2;
  r.median_ms = 1.5;
  r.min_ms = 1.25;
  r.max_ms = 2.75;
  r.median_low_ms = 1.375;
  r.median_high_ms = 1.625;
  r.samples_ms = {1.25, 1.5, 2.75, 1.375, 1.625};
  r.versus_baseline = "no clear difference";
  r.machine_load = 0.3125;
  r.process_peak_rss = 1610612736;
  r.timed_alone = true;
  r.predicted_peak = {13379584, 2097152};
  r.measured_peak = {13379585, 2097153};
  r.residual_bytes = 4194304;
  r.peak_pass = "recompute";
  for (size_t k = 0; k < kNumBufferKinds; ++k) r.peak_bytes[k] = static_cast<int64_t>(1000 * (k + 1));
  r.peak_bytes[static_cast<size_t>(BufferKind::kOffloadedResidual)] = 0;  // never on the device, not written
  r.forward_flops = 1234567890123;
  r.recompute_flops = 987654321;
  r.backward_flops = 2469135780246;
  r.max_grad_diff = 2.5e-07;
  return r;
}

TEST(SweepOutput, JsonGivesBackEveryField) {
  SweepRow second = every_field_set();
  second.config = 8;
  second.policy = "everything_saveable";
  second.versus_baseline = "";  // the baseline's
  second.samples_ms = {};
  const std::vector<SweepRow> rows = {every_field_set(), second};
  const std::vector<SweepRow> read = parse_json_rows(format_json(rows), "rows.json");
  ASSERT_EQ(read.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(rows[i].policy);
    const SweepRow &a = rows[i], &b = read[i];
    EXPECT_EQ(b.config, a.config);
    EXPECT_EQ(b.grid_size, a.grid_size);
    EXPECT_EQ(b.model, a.model);
    EXPECT_EQ(b.policy, a.policy);
    EXPECT_EQ(b.backend, a.backend);
    EXPECT_EQ(b.threads, a.threads);
    EXPECT_EQ(b.median_ms, a.median_ms);
    EXPECT_EQ(b.min_ms, a.min_ms);
    EXPECT_EQ(b.max_ms, a.max_ms);
    EXPECT_EQ(b.median_low_ms, a.median_low_ms);
    EXPECT_EQ(b.median_high_ms, a.median_high_ms);
    EXPECT_EQ(b.samples_ms, a.samples_ms);
    EXPECT_EQ(b.versus_baseline, a.versus_baseline);
    EXPECT_EQ(b.machine_load, a.machine_load);
    EXPECT_EQ(b.process_peak_rss, a.process_peak_rss);
    EXPECT_EQ(b.timed_alone, a.timed_alone);
    EXPECT_EQ(b.predicted_peak, a.predicted_peak);
    EXPECT_EQ(b.measured_peak, a.measured_peak);
    EXPECT_EQ(b.residual_bytes, a.residual_bytes);
    EXPECT_EQ(b.peak_pass, a.peak_pass);
    EXPECT_EQ(b.peak_bytes, a.peak_bytes);
    EXPECT_EQ(b.forward_flops, a.forward_flops);
    EXPECT_EQ(b.recompute_flops, a.recompute_flops);
    EXPECT_EQ(b.backward_flops, a.backward_flops);
    EXPECT_EQ(b.max_grad_diff, a.max_grad_diff);
  }
}

TEST(SweepOutput, SamplesAreAnArrayInJsonAndOneCellInCsv) {
  SweepRow r = every_field_set();
  r.samples_ms.push_back(NAN);  // JSON has no NaN: null, read back as NaN
  const std::string json = format_json({r});
  EXPECT_NE(json.find("\"samples_ms\": [\n      1.25,\n      1.5,\n      2.75,\n      1.375,\n      1.625,\n      null\n    ]"),
            std::string::npos)
      << json;
  const std::vector<SweepRow> read = parse_json_rows(json, "rows.json");
  ASSERT_EQ(read[0].samples_ms.size(), 6u);
  EXPECT_TRUE(std::isnan(read[0].samples_ms[5]));

  // The header names the new columns; the samples are written with four decimals, like the times.
  std::istringstream csv(format_csv({every_field_set()}));
  std::string header, line;
  std::getline(csv, header);
  std::getline(csv, line);
  for (const char* column :
       {"grid_size", "median_low_ms", "median_high_ms", "versus_baseline", "machine_load", "process_peak_rss", "timed_alone", "samples_ms"})
    EXPECT_NE(("," + header + ",").find(std::string(",") + column + ","), std::string::npos) << column;
  EXPECT_NE(line.find(",180,1.3750,1.6250,no clear difference,0.3125,1610612736,true,1.2500 1.5000 2.7500 1.3750 1.6250,"),
            std::string::npos)
      << line;
}

TEST(SweepOutput, JsonFromBeforeTheTimingFieldsStillReads) {
  // A row as format_json wrote it before the interval, samples, verdict, load and grid size.
  const std::string old = R"json([
  {
    "config": 0, "model": "mlp", "policy": "nothing_saveable", "backend": "highway,reference", "threads": 1,
    "median_ms": 2.5, "min_ms": 2.25, "max_ms": 3.0,
    "predicted_peak_device": 4096, "measured_peak_device": 4096,
    "predicted_peak_pinned_host": 0, "measured_peak_pinned_host": 0,
    "residual_bytes": 1024, "forward_flops": 100, "recompute_flops": 40, "backward_flops": 200,
    "max_grad_diff": 0, "peak_pass": "backward",
    "peak_parameter_bytes": 1, "peak_data_input_bytes": 2, "peak_gradient_bytes": 3,
    "peak_saved_residual_bytes": 4, "peak_recomputed_bytes": 5, "peak_cotangent_bytes": 6,
    "peak_forward_temporary_bytes": 7, "peak_kernel_workspace_bytes": 8
  }
])json";
  const std::vector<SweepRow> rows = parse_json_rows(old, "old.json");
  ASSERT_EQ(rows.size(), 1u);
  const SweepRow& r = rows[0];
  EXPECT_EQ(r.config, 1u);  // such files counted from 0; configurations now count from 1
  EXPECT_EQ(r.policy, "nothing_saveable");
  EXPECT_EQ(r.median_ms, 2.5);
  EXPECT_EQ(r.predicted_peak[0], 4096);
  EXPECT_EQ(r.recompute_flops, 40);
  EXPECT_EQ(r.peak_bytes[static_cast<size_t>(BufferKind::kKernelWorkspace)], 8);
  // The new fields take SweepRow's defaults.
  const SweepRow defaults;
  EXPECT_EQ(r.grid_size, defaults.grid_size);
  EXPECT_EQ(r.median_low_ms, 0.0);
  EXPECT_EQ(r.median_high_ms, 0.0);
  EXPECT_TRUE(r.samples_ms.empty());
  EXPECT_EQ(r.versus_baseline, "");
  EXPECT_EQ(r.machine_load, 0.0);
  EXPECT_EQ(r.process_peak_rss, 0);
  EXPECT_FALSE(r.timed_alone);
}

TEST(SweepOutput, SamplesThatAreNotNumbersAreNamed) {
  std::string json = format_json({every_field_set()});
  const std::string samples = "\"samples_ms\": [";
  json.replace(json.find(samples), samples.size(), "\"samples_ms\": [\"fast\", ");
  try {
    parse_json_rows(json, "bad.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "bad.json: row 0: 'samples_ms' is not a list of numbers");
  }
}

}  // namespace
}  // namespace rematkit::sweep
