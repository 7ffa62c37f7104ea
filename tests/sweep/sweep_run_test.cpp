// Running sweeps: residual bytes of a small MLP worked out by hand, remat leaving gradients
// unchanged, measured peaks equal to predicted ones, and the table, CSV and JSON agreeing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include "rematkit/interpreter/simulated_mesh.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_output.hpp"
#include "rematkit/sweep/sweep_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::sweep {
namespace {

const char* kSmall = R"yaml(models:
  - name: tiny
    mlp: {input: 3, widths: [4, 2], batch: 2, activation: relu, remat: per_layer}
policies: [nothing_saveable, everything_saveable, dots_saveable]
backends: [reference, "highway,reference"]
threads: [1, 2]
repetitions: 2
)yaml";

TEST(SweepRun, NothingSaveablePerLayerKeepsEachLayersInputsAndParams) {
  const std::vector<SweepRow> rows = run_sweep(parse_sweep(kSmall, "small.yaml"), default_plugins()).rows;
  ASSERT_EQ(rows.size(), 1u * 3 * 2 * 2);
  // With a checkpoint per layer and nothing saveable, the backward pass keeps the inputs of each
  // checkpoint that its recomputation and transposition read: x f32[2,3], kernel f32[3,4] and bias
  // f32[4] (relu's mask is recomputed from x @ kernel + bias); then relu(...) f32[2,4] and kernel
  // f32[4,2], but not the last bias: with no activation after it, nothing reads the sum it enters.
  EXPECT_EQ(rows[0].policy, "nothing_saveable");
  EXPECT_EQ(rows[0].residual_bytes, 4 * (6 + 12 + 4 + 8 + 8));
  for (const SweepRow& row : rows) {
    SCOPED_TRACE(row.policy + " on " + row.backend + ", " + std::to_string(row.threads) + " thread(s)");
    EXPECT_EQ(row.max_grad_diff, 0.0);
    EXPECT_EQ(row.measured_peak, row.predicted_peak);
    EXPECT_GT(row.predicted_peak[0], 0);
    EXPECT_LE(row.min_ms, row.median_ms);
    EXPECT_LE(row.median_ms, row.max_ms);
    // The transposed equations do not depend on the policy; nothing_saveable recomputes the most and,
    // forward and recomputation together, computes the most.
    EXPECT_EQ(row.backward_flops, rows[0].backward_flops);
    EXPECT_LE(row.recompute_flops, rows[0].recompute_flops);
    EXPECT_LE(row.forward_flops + row.recompute_flops, rows[0].forward_flops + rows[0].recompute_flops);
  }
}

TEST(SweepRun, RowsSayWhereThePeakComesFrom) {
  SweepConfig config = parse_sweep(kSmall, "small.yaml");
  config.backends = {{"reference"}};
  config.threads = {1};
  const std::vector<SweepRow> rows = run_sweep(config, default_plugins()).rows;
  ASSERT_EQ(rows.size(), 3u);
  for (const SweepRow& row : rows) {
    SCOPED_TRACE(row.policy);
    // A training step keeps its inputs for the whole step: the four params (f32[3,4], [4], [4,2],
    // [2]: 48, 16, 32 and 8 bytes) take 64 bytes each in the arena, and so does x (f32[2,3]); a
    // literal loaded at the peak step is data input too (the transposed relu broadcasts a 0).
    EXPECT_EQ(row.peak_bytes[static_cast<size_t>(BufferKind::kParameter)], 4 * 64);
    EXPECT_GE(row.peak_bytes[static_cast<size_t>(BufferKind::kDataInput)], 64);
    EXPECT_EQ(row.peak_bytes[static_cast<size_t>(BufferKind::kOffloadedResidual)], 0);  // never on the device
    EXPECT_TRUE(row.peak_pass == "forward" || row.peak_pass == "recompute" || row.peak_pass == "backward") << row.peak_pass;
    int64_t at_peak = 0;
    for (int64_t bytes : row.peak_bytes) at_peak += bytes;
    EXPECT_LE(at_peak, row.predicted_peak[0]);  // the live peak; the arena may be larger
  }
  // The JSON file gives them back (sweep-merge reads it).
  const std::vector<SweepRow> read = parse_json_rows(format_json(rows), "rows.json");
  ASSERT_EQ(read.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(read[i].peak_pass, rows[i].peak_pass);
    EXPECT_EQ(read[i].peak_bytes, rows[i].peak_bytes);
  }
}

// Splits a table line on runs of two or more spaces.
std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  const std::regex gap(" {2,}");
  for (std::sregex_token_iterator it(line.begin(), line.end(), gap, -1), end; it != end; ++it)
    if (!it->str().empty()) cells.push_back(it->str());
  return cells;
}

// Splits a CSV line (RFC 4180 quoting).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.emplace_back();
    else cells.back() += c;
  }
  return cells;
}

TEST(SweepOutput, TableCsvAndJsonHoldTheSameRows) {
  SweepConfig config = parse_sweep(kSmall, "small.yaml");
  config.policies = {"nothing_saveable", "save_only_these_names(\"x\")"};  // a quote and a comma-free call
  config.backends = {{"highway", "reference"}};
  const std::vector<SweepRow> rows = run_sweep(config, default_plugins()).rows;
  std::istringstream table(format_wide_table(rows)), csv(format_csv(rows));
  const nlohmann::json json = nlohmann::json::parse(format_json(rows));
  std::string table_line, csv_line;
  std::getline(table, table_line);
  std::getline(csv, csv_line);
  // The files have the wide table's columns, then the timing's and where the peak comes from.
  const std::vector<std::string> header = table_cells(table_line), file_header = csv_cells(csv_line);
  ASSERT_GT(file_header.size(), header.size());
  ASSERT_EQ(std::vector<std::string>(file_header.begin(), file_header.begin() + static_cast<long>(header.size())), header);
  EXPECT_EQ(file_header[header.size()], "grid_size");
  EXPECT_NE(std::find(file_header.begin(), file_header.end(), "peak_pass"), file_header.end());
  ASSERT_EQ(json.size(), rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    ASSERT_TRUE(std::getline(table, table_line) && std::getline(csv, csv_line));
    const std::vector<std::string> cells = table_cells(table_line), file_cells = csv_cells(csv_line);
    ASSERT_EQ(cells.size(), header.size());
    ASSERT_EQ(file_cells.size(), file_header.size());
    EXPECT_EQ(cells, std::vector<std::string>(file_cells.begin(), file_cells.begin() + static_cast<long>(cells.size())));
    ASSERT_EQ(json[r].size(), file_header.size());
    for (size_t k = 0; k < file_header.size(); ++k) {
      const nlohmann::json& value = json[r][file_header[k]];
      if (value.is_string()) {
        EXPECT_EQ(value.get<std::string>(), file_cells[k]) << file_header[k];
      } else if (value.is_array()) {  // the samples: one CSV cell, joined by spaces
        std::istringstream samples(file_cells[k]);
        for (const nlohmann::json& ms : value) {
          double cell = 0;
          ASSERT_TRUE(samples >> cell) << file_header[k];
          EXPECT_DOUBLE_EQ(ms.get<double>(), cell) << file_header[k];
        }
      } else if (value.is_boolean()) {  // partial: true or false in both
        EXPECT_EQ(value.get<bool>() ? "true" : "false", file_cells[k]) << file_header[k];
      } else {
        EXPECT_DOUBLE_EQ(value.get<double>(), std::stod(file_cells[k])) << file_header[k];
      }
    }
  }
  EXPECT_EQ(rows[1].policy, "save_only_these_names(\"x\")");
}

TEST(SweepRun, TransformerAttentionDotsAreWhatTellTheDotPoliciesApart) {
  const char* yaml = R"yaml(models:
  - name: tf
    transformer: {layers: 2, batch: 2, sequence: 16, model: 32, heads: 4, mlp: 64, remat: per_layer}
policies: [dots_saveable, dots_with_no_batch_dims_saveable, nothing_saveable]
backends: ["highway,reference"]
repetitions: 1
)yaml";
  const std::vector<SweepRow> rows = run_sweep(parse_sweep(yaml, "tf.yaml"), default_plugins()).rows;
  ASSERT_EQ(rows.size(), 3u);
  // dots_saveable also keeps the two batched products of each layer's attention, the scores
  // f32[B,H,S,S] and the context f32[B,H,S,Dh]; the other dots have no batch dimensions.
  const int64_t batch = 2, heads = 4, sequence = 16, head_dim = 32 / 4;
  EXPECT_EQ(rows[0].residual_bytes - rows[1].residual_bytes,
            2 * 4 * (batch * heads * sequence * sequence + batch * heads * sequence * head_dim));
  EXPECT_LT(rows[2].residual_bytes, rows[1].residual_bytes);
  EXPECT_LT(rows[2].predicted_peak[0], rows[0].predicted_peak[0]);
  for (const SweepRow& row : rows) {
    EXPECT_EQ(row.max_grad_diff, 0.0) << row.policy;
    EXPECT_EQ(row.measured_peak, row.predicted_peak) << row.policy;
  }
}

TEST(SweepRun, GptRunsInBothDtypesWithThePlannedPeakAndHalfTheBytesInBf16) {
  const char* yaml = R"yaml(models:
  - name: gpt
    gpt: {layers: 2, batch: 2, sequence: 8, model: 16, heads: 2, vocab: 32, dropout: 0.1, remat: per_layer}
  - name: gpt-bf16
    gpt: {layers: 2, batch: 2, sequence: 8, model: 16, heads: 2, vocab: 32, dropout: 0.1, dtype: bf16, remat: per_layer}
policies: [nothing_saveable, dots_saveable]
backends: ["highway,reference"]
repetitions: 1
)yaml";
  const std::vector<SweepRow> rows = run_sweep(parse_sweep(yaml, "gpt.yaml"), default_plugins()).rows;
  ASSERT_EQ(rows.size(), 4u);
  // What bf16 does not halve: the token ids (i32[2,8], 64 bytes), the dropout key (8 bytes) and the
  // embeddings' dropout mask (bool[2,8,16], 256 bytes), kept outside the checkpoints.
  const int64_t other = 2 * 8 * 4 + 8 + 2 * 8 * 16;
  for (size_t p = 0; p < 2; ++p)
    EXPECT_EQ(2 * (rows[2 + p].residual_bytes - other), rows[p].residual_bytes - other) << rows[p].policy;
  EXPECT_LT(rows[0].residual_bytes, rows[1].residual_bytes);
  for (const SweepRow& row : rows) {
    EXPECT_EQ(row.max_grad_diff, 0.0) << row.model << " " << row.policy;
    EXPECT_EQ(row.measured_peak, row.predicted_peak) << row.model << " " << row.policy;
  }
}

TEST(SweepRun, EveryPolicyGivesTheBaselinesBitsOnEveryBackendListAndThreadCount) {
  // Policies fuse differently (a kept value ends a fusion, a recomputed chain fuses again): the
  // gelu's tanh once ran fused on Highway under one policy and alone on oneDNN under another, and
  // the gradients differed by 6.7e-8. Bits follow the equation, not the fusion.
  std::string yaml = R"yaml(models:
  - name: gpt
    gpt: {layers: 2, batch: 2, sequence: 32, model: 64, heads: 4, vocab: 128, dropout: 0.1, remat: per_layer}
  - name: gpt-bf16
    gpt: {layers: 1, batch: 2, sequence: 16, model: 32, heads: 2, vocab: 64, dtype: bf16, remat: per_layer}
  - name: mlp
    mlp: {input: 64, widths: [128, 128, 10], batch: 32, activation: tanh, remat: per_layer}
  - name: llama
    llama: {layers: 2, batch: 2, sequence: 16, model: 32, heads: 4, kv_heads: 2, vocab: 64, remat: per_layer}
  - name: llama-bf16-scanned
    llama: {layers: 2, batch: 1, sequence: 8, model: 32, heads: 4, kv_heads: 1, vocab: 64, dtype: bf16, loop: scan, remat: per_layer}
policies: [everything_saveable, nothing_saveable, dots_saveable, dots_with_no_batch_dims_saveable]
threads: [1, 2]
repetitions: 1
)yaml";
#ifdef REMATKIT_HAVE_ONEDNN
  yaml += "backends: [\"onednn,highway,reference\", \"onednn,reference\", \"highway,reference\"]\n";
#else
  yaml += "backends: [\"highway,reference\"]\n";  // the sanitizer build has no oneDNN
#endif
  const std::vector<SweepRow> rows = run_sweep(parse_sweep(yaml, "bits.yaml"), default_plugins()).rows;
  ASSERT_FALSE(rows.empty());
  for (const SweepRow& row : rows) {
    EXPECT_EQ(row.max_grad_diff, 0.0) << row.model << " " << row.policy << " on " << row.backend << ", " << row.threads
                                      << " thread(s)";
    // The process held the step's arena, which the step touched all of.
    EXPECT_GE(row.process_peak_rss, row.measured_peak[0]) << row.model << " " << row.policy;
  }
}

TEST(SweepRun, CnnRunsOnEveryBackendListWithThePlannedPeakAndTheSameGradients) {
  std::string yaml = R"yaml(models:
  - name: cnn
    cnn: {batch: 2, image: 8, channels: 3, blocks: [4, 8], downsample: true, classes: 5, remat: per_layer}
policies: [everything_saveable, nothing_saveable, dots_saveable]
repetitions: 1
)yaml";
#ifdef REMATKIT_HAVE_ONEDNN
  yaml += "backends: [\"highway,reference\", \"onednn,highway,reference\"]\n";
  const size_t lists = 2;
#else
  yaml += "backends: [\"highway,reference\"]\n";  // the sanitizer build has no oneDNN
  const size_t lists = 1;
#endif
  const std::vector<SweepRow> rows = run_sweep(parse_sweep(yaml, "cnn.yaml"), default_plugins()).rows;
  ASSERT_EQ(rows.size(), 3 * lists);
  // dots_saveable keeps the convolutions' outputs as JAX's does (conv_general_dilated counts as a
  // dot), not the relus' masks; nothing_saveable keeps only the blocks' inputs.
  for (size_t list = 0; list < rows.size(); list += 3) {
    EXPECT_LT(rows[list + 1].residual_bytes, rows[list + 2].residual_bytes);
    EXPECT_LT(rows[list + 2].residual_bytes, rows[list].residual_bytes);
  }
  for (const SweepRow& row : rows) {
    EXPECT_EQ(row.max_grad_diff, 0.0) << row.backend << " " << row.policy;
    EXPECT_EQ(row.measured_peak, row.predicted_peak) << row.backend << " " << row.policy;
  }
}

TEST(SweepRun, ScannedLayersKeepWhatFlaxsScansKeep) {
  const std::vector<SweepRow> rows = run_sweep(parse_sweep(R"yaml(models:
  - name: unrolled
    mlp: {input: 4, depth: 4, width: 4, batch: 2, activation: tanh, remat: per_layer}
  - name: scan
    mlp: {input: 4, depth: 4, width: 4, batch: 2, activation: tanh, loop: scan, remat: per_layer}
  - name: remat-scan
    mlp: {input: 4, depth: 4, width: 4, batch: 2, activation: tanh, remat_scan: [2, 2]}
  - name: transformer-scan
    transformer: {layers: 2, batch: 1, sequence: 4, model: 8, heads: 2, mlp: 16, loop: scan, remat: whole}
  - name: transformer-remat-scan
    transformer: {layers: 4, batch: 1, sequence: 4, model: 8, heads: 2, mlp: 16, remat_scan: [2, 2]}
  - name: gpt-scan
    gpt: {layers: 2, batch: 1, sequence: 4, model: 8, heads: 2, vocab: 11, loop: scan, remat: per_layer}
policies: [nothing_saveable, everything_saveable]
backends: [reference]
repetitions: 1
)yaml", "scan.yaml"), default_plugins()).rows;
  ASSERT_EQ(rows.size(), 6u * 2);
  // nothing_saveable, worked out by hand (4-byte floats): a checkpoint per layer keeps each layer's
  // input x f32[2,4] and its kernel f32[4,4] and bias f32[4]: 4 * (8 + 16 + 4) per layer when scanned
  // (the carries stacked f32[4,2,4], the params forwarded). Unrolled, the last layer has no
  // activation, so nothing reads the sum its bias enters: 4 floats fewer.
  EXPECT_EQ(rows[2].residual_bytes, 4 * 4 * (8 + 16 + 4));
  EXPECT_EQ(rows[0].residual_bytes, rows[2].residual_bytes - 4 * 4);
  // remat_scan (2, 2): the params, and the input of each of the 2 outer blocks alone.
  EXPECT_EQ(rows[4].residual_bytes, 4 * (4 * (16 + 4) + 2 * 8));
  for (const SweepRow& row : rows) {
    SCOPED_TRACE(row.model + " " + row.policy);
    EXPECT_EQ(row.max_grad_diff, 0.0);
    EXPECT_EQ(row.measured_peak, row.predicted_peak);
  }
}

TEST(SweepRun, ProgramModelsNeedAScalarLoss) {
  const std::string dir = rematkit::testing::temp_dir();
  std::ofstream(dir + "/loss.jaxpr") << "{ lambda ; w:f32[8]. let a:f32[8] = sin w\n b:f32[8] = sin a\n"
                                        "  l:f32[] = reduce_sum[axes=(0,)] b in (l,) }";
  std::ofstream(dir + "/vector.jaxpr") << "{ lambda ; w:f32[8]. let a:f32[8] = sin w in (a,) }";
  const std::string yaml = "models:\n  - program: {file: loss.jaxpr}\npolicies: [everything_saveable, nothing_saveable]\n"
                           "backends: [reference]\nrepetitions: 1\n";
  const std::vector<SweepRow> rows = run_sweep(parse_sweep(yaml, dir + "/s.yaml"), default_plugins()).rows;
  ASSERT_EQ(rows.size(), 2u);
  // sin, cos, sin, cos forward when saving (8 each) and the sum (8); nothing_saveable recomputes the
  // sines and cosines the backward pass needs.
  EXPECT_EQ(rows[0].forward_flops, 5 * 8);
  EXPECT_EQ(rows[1].max_grad_diff, 0.0);
  EXPECT_GT(rows[1].recompute_flops, 0);
  try {
    run_sweep(parse_sweep(yaml.substr(0, yaml.find("loss.jaxpr")) + "vector.jaxpr}\npolicies: [nothing_saveable]\n"
                          "backends: [reference]\n", dir + "/s.yaml"), default_plugins());
    ADD_FAILURE() << "a vector output was accepted as a loss";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/s.yaml: model 'program_0': a training step needs a program whose one "
                                           "output is a floating scalar loss (f32[]), not (f32[8])");
  }
}

TEST(SweepRun, ProgramModelsTrainWhatWrtNamesAndRetargetTheirCheckpoints) {
  // loss = sum(sin(checkpoint[everything_saveable](sin(w * x)))); every value is f32[8], 32 bytes.
  const std::string dir = rematkit::testing::temp_dir();
  std::ofstream(dir + "/ckpt.jaxpr")
      << "{ lambda ; w:f32[8] x:f32[8]. let y:f32[8] = checkpoint[policy=everything_saveable jaxpr={ lambda ; "
         "a:f32[8] b:f32[8]. let c:f32[8] = mul a b\n d:f32[8] = sin c in (d,) }] w x\n e:f32[8] = sin y\n "
         "l:f32[] = reduce_sum[axes=(0,)] e in (l,) }";
  auto bytes = [&](const std::string& model, const std::string& policy) {
    const std::string yaml = "models:\n  - program: " + model + "\npolicies: [" + policy +
                             "]\nbackends: [reference]\nrepetitions: 1\n";
    return run_sweep(parse_sweep(yaml, dir + "/s.yaml"), default_plugins()).rows.at(0).residual_bytes;
  };
  // nothing_saveable around the whole program keeps w and x. Retargeted, the checkpoint keeps its
  // inputs w and x, and the outer sin, now outside any checkpoint, its cos: 96.
  EXPECT_EQ(bytes("{file: ckpt.jaxpr}", "nothing_saveable"), 64);
  EXPECT_EQ(bytes("{file: ckpt.jaxpr, retarget: true}", "nothing_saveable"), 96);
  // everything_saveable keeps w and x (the mul's tangent reads both) and both cosines: 128. With
  // respect to w alone (x, the data, held) the tangent tw * x reads x only: 96.
  EXPECT_EQ(bytes("{file: ckpt.jaxpr}", "everything_saveable"), 128);
  EXPECT_EQ(bytes("{file: ckpt.jaxpr, wrt: [w]}", "everything_saveable"), 96);
  try {
    bytes("{file: ckpt.jaxpr, wrt: [z]}", "nothing_saveable");
    ADD_FAILURE() << "an unknown wrt name was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/s.yaml:2:38: wrt: 'z' is not an argument of the program (the arguments: w, x)");
  }
  try {
    bytes("{file: ckpt.jaxpr, retarget: maybe}", "nothing_saveable");
    ADD_FAILURE() << "retarget: maybe was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/s.yaml:2:43: retarget must be true or false, not 'maybe'");
  }
}

TEST(SweepRun, UnknownPoliciesAndBackendsAreBadInput) {
  SweepConfig config = parse_sweep(kSmall, "small.yaml");
  config.policies = {"no_such_policy"};
  EXPECT_THROW(run_sweep(config, default_plugins()), Error);
  config = parse_sweep(kSmall, "small.yaml");
  config.backends = {{"gpu"}};
  EXPECT_THROW(run_sweep(config, default_plugins()), Error);
}

TEST(SweepRun, APolicysRepetitionsInterleaveAndCarryAnIntervalAndAVerdict) {
  SweepConfig config = parse_sweep(kSmall, "small.yaml");
  config.backends = {{"reference"}};
  config.threads = {1};
  config.repetitions = 7;
  const std::vector<SweepRow> rows = run_sweep(config, default_plugins()).rows;
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& row = rows[i];
    SCOPED_TRACE(row.policy);
    EXPECT_EQ(row.config, i + 1);  // counted from 1, as --shard counts
    EXPECT_EQ(row.grid_size, 3u);
    ASSERT_EQ(row.samples_ms.size(), 7u);
    // Seven samples: [x(1), x(7)] covers 1 - 2/128 of the time; [x(2), x(6)] only 1 - 16/128.
    EXPECT_EQ(row.median_low_ms, row.min_ms);
    EXPECT_EQ(row.median_high_ms, row.max_ms);
    EXPECT_LE(row.median_low_ms, row.median_ms);
    EXPECT_LE(row.median_ms, row.median_high_ms);
    EXPECT_GE(row.machine_load, 0.0);
    EXPECT_LE(row.machine_load, 1.0);
    ASSERT_NE(row.memory, nullptr);
    EXPECT_EQ(row.memory->peak_bytes, row.peak_bytes);
  }
  // everything_saveable (the second policy) is the baseline; the others get a verdict against it.
  EXPECT_EQ(rows[1].versus_baseline, "");
  for (size_t i : {0u, 2u})
    EXPECT_TRUE(rows[i].versus_baseline == "faster" || rows[i].versus_baseline == "slower" ||
                rows[i].versus_baseline == "no clear difference")
        << rows[i].versus_baseline;
}

TEST(SweepRun, AShardWithoutTheBaselineStillTimesItForTheVerdicts) {
  SweepConfig config = parse_sweep(kSmall, "small.yaml");
  config.backends = {{"reference"}};
  config.threads = {1};
  SweepRunOptions options;
  options.shard = Shard{1, 3};  // configuration 1 alone: nothing_saveable
  const SweepResult result = run_sweep(config, default_plugins(), options);
  ASSERT_EQ(result.rows.size(), 1u);
  EXPECT_EQ(result.rows[0].policy, "nothing_saveable");
  EXPECT_FALSE(result.rows[0].versus_baseline.empty());
  EXPECT_FALSE(result.interrupted);
}

TEST(SweepRun, AutoRepetitionsStopAtTheTimeLimitWhenTheIntervalStaysWide) {
  SweepConfig config = parse_sweep(kSmall, "small.yaml");
  config.backends = {{"reference"}};
  config.threads = {1};
  config.auto_repetitions = true;
  config.target_interval = 1e-9;  // never narrow enough: only the time limit stops it
  config.time_limit_seconds = 0.2;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<SweepRow> rows = run_sweep(config, default_plugins()).rows;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
  ASSERT_EQ(rows.size(), 3u);
  for (const SweepRow& row : rows) {
    EXPECT_GE(row.samples_ms.size(), 6u);  // the fewest with a 95% interval
    EXPECT_EQ(row.samples_ms.size(), rows[0].samples_ms.size());  // rounds time every policy once
  }
  // A target no interval misses is met after the first six rounds (a sweep file keeps it below 100%).
  config.target_interval = 1e9;
  config.time_limit_seconds = 60;
  for (const SweepRow& row : run_sweep(config, default_plugins()).rows) EXPECT_EQ(row.samples_ms.size(), 6u);
}

TEST(SweepRun, AStopKeepsTheGroupsThatFinished) {
  SweepConfig config = parse_sweep(kSmall, "small.yaml");
  config.threads = {1};  // two groups: reference, then highway,reference
  std::atomic<bool> stop{false};
  SweepRunOptions options;
  options.stop = &stop;
  size_t groups = 0;
  options.progress = [&](size_t, size_t, const std::string&) {
    if (++groups == 2) stop = true;  // as a Ctrl-C would, while the second group runs
  };
  const SweepResult result = run_sweep(config, default_plugins(), options);
  EXPECT_TRUE(result.interrupted);
  ASSERT_EQ(result.rows.size(), 3u);
  for (const SweepRow& row : result.rows) EXPECT_EQ(row.backend, "reference");
}

// A gpt under FSDP over 4 devices runs a step per device on the simulated mesh: each device's
// arena reaches its plan's peak, the policies' gradients agree, and the rows say what a device
// sends, nothing_saveable sending again the gathers that everything_saveable keeps.
TEST(SweepRun, AModelOnAMeshRunsADeviceEach) {
  const SweepConfig config = parse_sweep(R"yaml(models:
  - name: fsdp
    gpt: {layers: 2, batch: 4, sequence: 8, model: 16, heads: 2, vocab: 32, parallel: {fsdp: 4}}
  - name: whole
    gpt: {layers: 2, batch: 4, sequence: 8, model: 16, heads: 2, vocab: 32}
policies: [everything_saveable, nothing_saveable]
backends: [reference]
repetitions: 1
)yaml",
                                         "mesh.yaml");
  const std::vector<SweepRow> rows = run_sweep(config, default_plugins()).rows;
  ASSERT_EQ(rows.size(), 4u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(rows[i].failure.empty()) << rows[i].failure;
    EXPECT_EQ(rows[i].measured_peak[0], rows[i].predicted_peak[0]);
    EXPECT_EQ(rows[i].max_grad_diff, 0);
    EXPECT_GT(rows[i].median_ms, 0);
    EXPECT_GT(rows[i].forward_comm_bytes, 0);
    EXPECT_EQ(rows[i].backward_comm_bytes, rows[0].backward_comm_bytes);
    // One device holds a quarter of the batch and of the params.
    EXPECT_LT(rows[i].predicted_peak[0], rows[i + 2].predicted_peak[0]);
    EXPECT_TRUE(rows[i + 2].failure.empty()) << rows[i + 2].failure;
    EXPECT_EQ(rows[i + 2].forward_comm_bytes, 0);
  }
  EXPECT_EQ(rows[0].recompute_comm_bytes, 0);
  EXPECT_EQ(rows[1].recompute_comm_bytes, 19584);  // as parallel_step_test.cpp works it out
}

// A group run as one device of its model's mesh, each device calling run_group in step (as the
// ranks of mpirun do; here threads of the simulated mesh, each with its transport): every device
// gets the rows the group gives with every device in this process, but for the timings.
TEST(SweepRun, AGroupRunAsOneDeviceEachIsTheGroupRunWhole) {
  const SweepConfig config = parse_sweep(R"yaml(models:
  - gpt: {layers: 1, batch: 4, sequence: 4, model: 8, heads: 2, vocab: 16, parallel: {data: 2, tensor: 2}}
policies: [everything_saveable, nothing_saveable]
backends: [reference]
repetitions: auto
time_limit: 0.05
)yaml",
                                         "device.yaml");
  const SweepGroup group = sweep_groups(config)[0];
  const auto all = [](size_t) { return true; };
  const std::vector<SweepRow> whole = run_group(config, default_plugins(), group, all);
  std::vector<std::vector<SweepRow>> devices(4);
  run_on_simulated_mesh(parse_mesh_option("data=2,fsdp=1,tensor=2", {}), [&](int64_t d) {
    devices[static_cast<size_t>(d)] = run_group(config, default_plugins(), group, all, nullptr, nullptr, &simulated_transport());
  });
  ASSERT_EQ(whole.size(), 2u);
  for (const std::vector<SweepRow>& rows : devices) {
    ASSERT_EQ(rows.size(), whole.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_TRUE(rows[i].failure.empty()) << rows[i].failure;
      EXPECT_EQ(rows[i].predicted_peak, whole[i].predicted_peak);
      EXPECT_EQ(rows[i].measured_peak, whole[i].measured_peak);
      EXPECT_EQ(rows[i].max_grad_diff, 0);
      EXPECT_EQ(rows[i].residual_bytes, whole[i].residual_bytes);
      EXPECT_EQ(rows[i].recompute_comm_bytes, whole[i].recompute_comm_bytes);
      // The devices agreed when to stop timing: as many rounds on each.
      EXPECT_EQ(rows[i].samples_ms.size(), devices[0][i].samples_ms.size());
    }
  }
}

// A gpt and a llama under Megatron tensor parallelism over 2 devices, a device each on the
// simulated mesh: the arenas reach their plans' peaks, the policies' gradients agree, and
// nothing_saveable sends the attention's all-reduce again.
TEST(SweepRun, TensorParallelModelsRunADeviceEach) {
  const SweepConfig config = parse_sweep(R"yaml(models:
  - gpt: {layers: 2, batch: 4, sequence: 8, model: 16, heads: 2, vocab: 32, parallel: {tensor: 2}}
  - llama: {layers: 1, batch: 2, sequence: 4, model: 16, heads: 4, kv_heads: 2, mlp: 16, vocab: 16, parallel: {tensor: 2}}
policies: [everything_saveable, nothing_saveable]
backends: [reference]
repetitions: 1
)yaml",
                                         "tensor.yaml");
  const std::vector<SweepRow> rows = run_sweep(config, default_plugins()).rows;
  ASSERT_EQ(rows.size(), 4u);
  for (const SweepRow& row : rows) {
    EXPECT_TRUE(row.failure.empty()) << row.failure;
    EXPECT_EQ(row.measured_peak[0], row.predicted_peak[0]);
    EXPECT_EQ(row.max_grad_diff, 0);
  }
  EXPECT_EQ(rows[0].forward_comm_bytes, 8192);  // as parallel_step_test.cpp works them out
  EXPECT_EQ(rows[0].recompute_comm_bytes, 0);
  EXPECT_EQ(rows[1].recompute_comm_bytes, 4096);
  EXPECT_GT(rows[3].recompute_comm_bytes, 0);
}

}  // namespace
}  // namespace rematkit::sweep
