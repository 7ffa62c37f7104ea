// Sweep files: what they say is what the config holds, and each mistake is one error at its place.
#include "rematkit/sweep/sweep_config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <tuple>

#include "rematkit/ir/error.hpp"
#include "rematkit/sweep/sweep_checks.hpp"
#include "support/test_support.hpp"

namespace rematkit::sweep {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_sweep(yaml, "s.yaml");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "(accepted)";
}

const char* kGood = R"yaml(models:
  - name: small
    mlp: {input: 8, widths: [16, 4], batch: 2, activation: tanh, remat: whole}
  - mlp: {input: 3, depth: 2, width: 5}
  - program: {file: chain.jaxpr}
policies: [everything_saveable, "save_only_these_names('a')"]
backends: ["highway,reference", reference]
threads: [1, 2]
repetitions: 3
seed: 7
outputs: {csv: out.csv, json: out.json}
)yaml";

TEST(SweepConfig, ReadsEveryKey) {
  const SweepConfig c = parse_sweep(kGood, "dir/s.yaml");
  ASSERT_EQ(c.models.size(), 3u);
  EXPECT_EQ(c.models[0].name, "small");
  EXPECT_EQ(c.models[0].mlp.widths, (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(c.models[0].mlp.batch, 2);
  EXPECT_EQ(c.models[0].mlp.activation, "tanh");
  EXPECT_EQ(c.models[0].mlp.remat, RematPlacement::kWhole);
  EXPECT_EQ(c.models[1].name, "mlp_1");
  EXPECT_EQ(c.models[1].mlp.widths, (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(c.models[1].mlp.remat, RematPlacement::kPerLayer);  // the default
  EXPECT_EQ(c.models[2].kind, ModelSpec::Kind::kProgram);
  EXPECT_EQ(c.models[2].program.file, "dir/chain.jaxpr");  // relative to the sweep file
  EXPECT_EQ(c.policies, (std::vector<std::string>{"everything_saveable", "save_only_these_names('a')"}));
  EXPECT_EQ(c.backends, (std::vector<std::vector<std::string>>{{"highway", "reference"}, {"reference"}}));
  EXPECT_EQ(c.threads, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.repetitions, 3);
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.csv, "dir/out.csv");
  EXPECT_EQ(c.json, "dir/out.json");
}

TEST(SweepConfig, MistakesAreNamedWithLineAndColumn) {
  const std::string tail = "policies: [nothing_saveable]\nbackends: [reference]\n";
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, widths: [4]}\npolices: [a]\n" + tail),
            "s.yaml:3:1: unknown key 'polices' in the sweep (did you mean 'policies'?) (expected: backend_options, "
            "backends, budget_time_limit, max_memory, models, outputs, plugins, policies, repetitions, seed, "
            "target_interval, threads, time_limit)");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, widths: [4], remat: sometimes}\n" + tail),
            "s.yaml:2:41: remat must be none, whole or per_layer, not 'sometimes'");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: eight, widths: [4]}\n" + tail),
            "s.yaml:2:18: input must be an integer, not 'eight'");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, widths: [4, 0]}\n" + tail),
            "s.yaml:2:33: widths entries must be at least 1, not 0");
  EXPECT_EQ(error_of("models:\n  - mlp: {widths: [4]}\n" + tail), "s.yaml:2:10: an mlp model needs 'input'");
  EXPECT_EQ(error_of("models:\n  - transformer: {layers: 1, batch: 1, sequence: 4, model: 10, heads: 3, mlp: 8}\n" + tail),
            "s.yaml:2:71: heads (3) must divide model (10)");
  EXPECT_EQ(error_of("models:\n  - gpt: {layers: 1, batch: 1, sequence: 4, model: 8, heads: 2, vocab: 9, dtype: f16}\n" + tail),
            "s.yaml:2:82: dtype must be f32 or bf16, not 'f16'");
  EXPECT_EQ(error_of("models:\n  - gpt: {layers: 1, batch: 1, sequence: 4, model: 8, heads: 2, vocab: 9, dropout: 1.5}\n" + tail),
            "s.yaml:2:84: dropout must be in [0, 1)");
  EXPECT_EQ(error_of("models:\n  - {mlp: {input: 1, widths: [1]}, program: {file: a}}\n" + tail),
            "s.yaml:2:5: a model is one of 'mlp', 'transformer', 'gpt', 'llama', 'cnn' or 'program'");
  EXPECT_EQ(error_of("models:\n  - llama: {layers: 1, batch: 1, sequence: 4, model: 8, heads: 2, kv_heads: 3, vocab: 9}\n" + tail),
            "s.yaml:2:77: kv_heads (3) must divide heads (2)");
  EXPECT_EQ(error_of("models:\n  - llama: {layers: 1, batch: 1, sequence: 4, model: 6, heads: 2, vocab: 9}\n" + tail),
            "s.yaml:2:64: model / heads (3) must be even: rotary embeddings rotate pairs");
  EXPECT_EQ(error_of("models:\n  - llama: {layers: 1, batch: 1, sequence: 4, model: 8, heads: 2, vocab: 9, dropout: 0.1}\n" + tail)
                .substr(0, 53),
            "s.yaml:2:77: unknown key 'dropout' in a llama model (");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, widths: [4]}\n" + tail + "threads: [0]\n"),
            "s.yaml:5:11: threads entries must be at least 1, not 0");
  EXPECT_EQ(error_of("models: [\n"), "s.yaml:2:1: not valid YAML: end of sequence flow not found");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, widths: [4]}\n"), "s.yaml:1:1: the sweep needs 'policies'");
  EXPECT_EQ(error_of(""), "s.yaml: the sweep file is empty");
}

TEST(SweepConfig, ReadsCnnModels) {
  const SweepConfig c = parse_sweep(R"yaml(models:
  - name: resnet
    cnn: {batch: 4, image: 16, channels: 3, blocks: [8, 16, 32], downsample: true, classes: 10, remat: whole}
  - cnn: {batch: 2, image: 8, channels: 1, blocks: 3, width: 4, classes: 2}
policies: [nothing_saveable]
backends: [reference]
)yaml", "s.yaml");
  ASSERT_EQ(c.models.size(), 2u);
  const CnnModel& a = c.models[0].cnn;
  EXPECT_EQ(c.models[0].kind, ModelSpec::Kind::kCnn);
  EXPECT_EQ(a.batch, 4);
  EXPECT_EQ(a.image, 16);
  EXPECT_EQ(a.channels, 3);
  EXPECT_EQ(a.widths, (std::vector<int64_t>{8, 16, 32}));
  EXPECT_TRUE(a.downsample);
  EXPECT_EQ(a.classes, 10);
  EXPECT_EQ(a.remat, RematPlacement::kWhole);
  const CnnModel& b = c.models[1].cnn;
  EXPECT_EQ(c.models[1].name, "cnn_1");
  EXPECT_EQ(b.widths, (std::vector<int64_t>{4, 4, 4}));
  EXPECT_FALSE(b.downsample);              // the default
  EXPECT_EQ(b.remat, RematPlacement::kPerLayer);    // the default
}

TEST(SweepConfig, CnnMistakesAreNamedWithLineAndColumn) {
  const std::string tail = "policies: [nothing_saveable]\nbackends: [reference]\n";
  EXPECT_EQ(error_of("models:\n  - name: c\n    cnn: {batch: 2, image: 8, channels: 3, blocks: [4], classes: 2,\n"
                     "          kernel: 5}\n" + tail),
            "s.yaml:4:11: unknown key 'kernel' in a cnn model (expected: batch, blocks, channels, classes, downsample, "
            "dtype, image, remat, width)");
  EXPECT_EQ(error_of("models:\n  - cnn: {batch: 2, image: 8, channels: 3, blocks: 2, classes: 2}\n" + tail),
            "s.yaml:2:10: a cnn model with a count of blocks needs 'width'");
  EXPECT_EQ(error_of("models:\n  - cnn: {batch: 2, image: 8, channels: 3, blocks: [4, 0], classes: 2}\n" + tail),
            "s.yaml:2:56: blocks entries must be at least 1, not 0");
  EXPECT_EQ(error_of("models:\n  - cnn: {batch: 2, image: 8, channels: 3, blocks: [4], width: 4, classes: 2}\n" + tail),
            "s.yaml:2:64: a cnn model takes blocks as a list of widths or as a count with width, not both");
  EXPECT_EQ(error_of("models:\n  - cnn: {batch: 2, image: 8, channels: 3, blocks: [4], classes: 2, downsample: yes please}\n" + tail),
            "s.yaml:2:81: downsample must be true or false, not 'yes please'");
  EXPECT_EQ(error_of("models:\n  - cnn: {batch: 2, channels: 3, blocks: [4], classes: 2}\n" + tail),
            "s.yaml:2:10: a cnn model needs 'image'");
}

TEST(SweepConfig, ReadsLayerLoops) {
  const SweepConfig c = parse_sweep(R"yaml(models:
  - mlp: {input: 8, depth: 6, width: 8, loop: scan, remat: whole}
  - mlp: {input: 8, depth: 6, width: 8, remat_scan: [2, 3]}
  - transformer: {layers: 4, batch: 1, sequence: 4, model: 8, heads: 2, mlp: 16, remat_scan: [2, 2]}
  - transformer: {layers: 2, batch: 1, sequence: 4, model: 8, heads: 2, mlp: 16, loop: unrolled}
policies: [nothing_saveable]
backends: [reference]
)yaml", "s.yaml");
  ASSERT_EQ(c.models.size(), 4u);
  EXPECT_EQ(c.models[0].mlp.loop.kind, LayerLoop::Kind::kScan);
  EXPECT_EQ(c.models[0].mlp.remat, RematPlacement::kWhole);
  EXPECT_EQ(c.models[1].mlp.loop.kind, LayerLoop::Kind::kRematScan);
  EXPECT_EQ(c.models[1].mlp.loop.lengths, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.models[2].transformer.scan_lengths, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.models[2].transformer.remat, RematPlacement::kNone);  // remat_scan's checkpoints alone
  EXPECT_TRUE(c.models[3].transformer.scan_lengths.empty());        // unrolled
}

// A sweep file's gpt and llama are Flax's configs with the reader's defaults (docs/sweeps.md):
// mlp 4 x model for the gpt; for the llama, kv_heads the heads and mlp 8/3 x model rounded up to 8.
TEST(SweepConfig, TokenModelsAreFlaxConfigsWithTheSweepsDefaults) {
  const SweepConfig c = parse_sweep(R"yaml(models:
  - gpt: {layers: 2, batch: 2, sequence: 8, model: 16, heads: 2, vocab: 32}
  - llama: {layers: 4, batch: 2, sequence: 8, model: 16, heads: 2, vocab: 32, remat_scan: [2, 2]}
  - gpt: {layers: 2, batch: 2, sequence: 8, model: 16, heads: 2, vocab: 32, loop: scan, dtype: bf16, remat: whole}
policies: [nothing_saveable]
backends: [reference]
)yaml", "s.yaml");
  const GptConfig& gpt = c.models[0].gpt;
  EXPECT_EQ(gpt.mlp, 64);
  EXPECT_EQ(gpt.dropout, 0.0);
  EXPECT_EQ(gpt.dtype, DType::kF32);
  EXPECT_EQ(gpt.remat, RematPlacement::kPerLayer);
  EXPECT_TRUE(gpt.scan_lengths.empty());
  EXPECT_EQ(gpt.tensor, 1);
  const LlamaConfig& llama = c.models[1].llama;
  EXPECT_EQ(llama.kv_heads, 2);
  EXPECT_EQ(llama.mlp, 48);
  EXPECT_EQ(llama.scan_lengths, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.models[1].llama.parallel.devices(), 1);
  EXPECT_EQ(c.models[2].gpt.scan_lengths, (std::vector<int64_t>{2}));
  EXPECT_EQ(c.models[2].gpt.dtype, DType::kBF16);
  EXPECT_EQ(c.models[2].gpt.remat, RematPlacement::kWhole);
}

TEST(SweepConfig, ACnnTakesADtype) {
  const SweepConfig c = parse_sweep(R"yaml(models:
  - cnn: {batch: 2, image: 8, channels: 3, blocks: [4], classes: 3}
  - cnn: {batch: 2, image: 8, channels: 3, blocks: [4], classes: 3, dtype: bf16}
policies: [nothing_saveable]
backends: [reference]
)yaml", "s.yaml");
  EXPECT_EQ(c.models[0].cnn.dtype, DType::kF32);
  EXPECT_EQ(c.models[1].cnn.dtype, DType::kBF16);
  EXPECT_EQ(error_of("models:\n  - cnn: {batch: 2, image: 8, channels: 3, blocks: [4], classes: 3, dtype: f64}\n"
                     "policies: [nothing_saveable]\nbackends: [reference]\n"),
            "s.yaml:2:76: dtype must be f32 or bf16, not 'f64'");
}

TEST(SweepConfig, LayerLoopMistakesAreNamedWithLineAndColumn) {
  const std::string tail = "policies: [nothing_saveable]\nbackends: [reference]\n";
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, depth: 6, width: 8, loop: vmap}\n" + tail),
            "s.yaml:2:47: loop must be unrolled or scan, not 'vmap'");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, depth: 6, width: 8, remat_scan: [4, 2]}\n" + tail),
            "s.yaml:2:53: remat_scan's lengths multiply to 8, not the 6 layers");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, depth: 6, width: 8, remat: whole, remat_scan: [2, 3]}\n" + tail),
            "s.yaml:2:67: remat_scan places its own checkpoints: give it without remat");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, widths: [8, 4], loop: scan}\n" + tail),
            "s.yaml:2:10: a scanned mlp repeats one layer: every width must be the input's (8), not 4");
}

// Every example sweep reads and names only policies and backends that exist, so the docs' commands
// run (examples/*.yaml). One that names a backend this build lacks (oneDNN is optional) is only read.
TEST(SweepConfig, EveryExampleSweepReadsAndChecks) {
  const std::vector<std::string> built = default_plugins().backend_names();
  size_t examples = 0, checked = 0;
  for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(REMATKIT_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const SweepConfig c = load_sweep(entry.path().string());
    ++examples;
    bool all_built = true;
    for (const std::vector<std::string>& list : c.backends)
      for (const std::string& backend : list) all_built = all_built && std::count(built.begin(), built.end(), backend) > 0;
    if (!all_built) continue;
    EXPECT_NO_THROW(check_sweep(c, default_plugins()));
    ++checked;
  }
  EXPECT_GE(examples, 8u);
  if (checked < examples) std::cout << "[ skipped  ] " << examples - checked << " example sweep(s) name a backend this build lacks\n";
}

TEST(SweepConfig, TheCnnExampleParses) {
  const SweepConfig c = load_sweep(REMATKIT_EXAMPLES_DIR "/cnn_sweep.yaml");
  ASSERT_EQ(c.models.size(), 1u);
  EXPECT_EQ(c.models[0].kind, ModelSpec::Kind::kCnn);
  EXPECT_EQ(c.models[0].cnn.widths, (std::vector<int64_t>{16, 32}));
}

// bench/policy_flops_bound.py's sweep times the default sweep's gpt-small: the same model.
TEST(SweepConfig, TheFlopsBoundExampleIsTheDefaultSweepsGptSmall) {
  const SweepConfig example = load_sweep(REMATKIT_EXAMPLES_DIR "/gpt_small_flops_bound.yaml");
  const SweepConfig defaults = parse_sweep(default_sweep_yaml(), "<default sweep>");
  ASSERT_EQ(example.models.size(), 1u);
  auto gpt_small = std::find_if(defaults.models.begin(), defaults.models.end(), [](const ModelSpec& m) { return m.name == "gpt-small"; });
  ASSERT_NE(gpt_small, defaults.models.end());
  const GptModel &a = example.models[0].gpt, &b = gpt_small->gpt;
  EXPECT_EQ(example.models[0].kind, ModelSpec::Kind::kGpt);
  EXPECT_EQ(std::tie(a.layers, a.batch, a.sequence, a.model, a.heads, a.mlp, a.vocab, a.dropout, a.dtype, a.remat),
            std::tie(b.layers, b.batch, b.sequence, b.model, b.heads, b.mlp, b.vocab, b.dropout, b.dtype, b.remat));
}

TEST(SweepConfig, TheDefaultSweepParses) {
  const SweepConfig c = parse_sweep(default_sweep_yaml(), "<default sweep>");
  EXPECT_GE(c.policies.size(), 6u);
  EXPECT_GE(c.backends.size(), 2u);
}

TEST(SweepConfig, AKeyGivenTwiceIsAnErrorAtItsSecondPlace) {
  // yaml-cpp keeps both entries and looks up the first: without the check, the second list of
  // policies would be dropped without a word.
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, widths: [4]}\npolicies: [nothing_saveable]\nbackends: [reference]\n"
                     "policies: [dots_saveable]\n"),
            "s.yaml:5:1: 'policies' is given twice in the sweep (first at s.yaml:3:1)");
  EXPECT_EQ(error_of("models:\n  - mlp: {input: 8, widths: [4], input: 9}\npolicies: [a]\nbackends: [reference]\n"),
            "s.yaml:2:34: 'input' is given twice in an mlp model (first at s.yaml:2:11)");
}

TEST(SweepConfig, RepetitionsAutoTakesATargetIntervalAndATimeLimit) {
  const std::string head = "models:\n  - mlp: {input: 8, widths: [4]}\npolicies: [nothing_saveable]\nbackends: [reference]\n";
  const SweepConfig c = parse_sweep(head + "repetitions: auto\ntarget_interval: 2%\ntime_limit: 2min\n", "s.yaml");
  EXPECT_TRUE(c.auto_repetitions);
  EXPECT_DOUBLE_EQ(c.target_interval, 0.02);
  EXPECT_DOUBLE_EQ(c.time_limit_seconds, 120);
  const SweepConfig d = parse_sweep(head + "repetitions: auto\ntarget_interval: 0.1\ntime_limit: 30s\n", "s.yaml");
  EXPECT_DOUBLE_EQ(d.target_interval, 0.1);
  EXPECT_DOUBLE_EQ(d.time_limit_seconds, 30);
  EXPECT_EQ(error_of(head + "repetitions: 3\ntarget_interval: 5%\n"), "s.yaml:6:18: target_interval is for repetitions: auto");
  EXPECT_EQ(error_of(head + "repetitions: auto\ntime_limit: soon\n"),
            "s.yaml:6:13: time_limit must be a time such as 30s or 2min, not 'soon'");
  EXPECT_EQ(error_of(head + "repetitions: auto\ntarget_interval: 150%\n"),
            "s.yaml:6:18: target_interval must be between 0 and 100%, such as 5%");
  EXPECT_EQ(error_of(head + "repetitions: often\n"), "s.yaml:5:14: repetitions (a count or auto) must be an integer, not 'often'");
}

TEST(SweepConfig, PluginsAndEntriesKeepTheirPlaces) {
  const SweepConfig c = parse_sweep("models:\n  - mlp: {input: 8, widths: [4]}\npolicies: [nothing_saveable, my_policy]\n"
                                    "backends: [reference, \"mine,reference\"]\nplugins: [lib/libmine.so]\n"
                                    "outputs: {csv: r.csv, report: html}\n",
                                    "dir/s.yaml");
  EXPECT_EQ(c.plugins, std::vector<std::string>{"dir/lib/libmine.so"});  // relative to the sweep file
  ASSERT_EQ(c.policy_where.size(), 2u);
  EXPECT_EQ(c.policy_where[1].str(), "dir/s.yaml:3:30");
  EXPECT_EQ(c.backend_where[1].str(), "dir/s.yaml:4:23");
  EXPECT_EQ(c.plugin_where[0].str(), "dir/s.yaml:5:11");
  EXPECT_EQ(c.csv_where.str(), "dir/s.yaml:6:16");
  EXPECT_EQ(c.report, "dir/html");
}

}  // namespace
}  // namespace rematkit::sweep

namespace rematkit::sweep {
namespace {

TEST(SweepConfig, WhatFuzzingFoundIsOneErrorAtItsPlace) {
  // fuzz/regressions/sweep/key_is_a_sequence.yaml: a list where a key goes escaped as yaml-cpp's
  // BadConversion, not a rematkit::Error.
  try {
    parse_sweep("models:\n  - mlp: {input: 128, [4, 16]}\npolicies: [a]\nbackends: [reference]\n", "k.yaml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "k.yaml:2:23: a key of an mlp model must be a name, not a list or a map");
  }
}

TEST(SweepConfig, ReadsParallelTokenModels) {
  const std::string tail = "policies: [nothing_saveable]\nbackends: [reference]\n";
  const SweepConfig c = parse_sweep("models:\n  - gpt: {layers: 1, batch: 8, sequence: 4, model: 8, heads: 2, vocab: 16, "
                                    "parallel: {data: 2, fsdp: 2}}\n  - llama: {layers: 1, batch: 4, sequence: 4, model: 8, "
                                    "heads: 2, vocab: 16, parallel: {fsdp: 4}}\n" + tail,
                                    "s.yaml");
  EXPECT_EQ(c.models[0].gpt.parallel.data, 2);
  EXPECT_EQ(c.models[0].gpt.parallel.fsdp, 2);
  EXPECT_EQ(c.models[1].llama.parallel.devices(), 4);
  const std::string gpt = "models:\n  - gpt: {layers: 1, batch: 6, sequence: 4, model: 8, heads: 2, vocab: 16, ";
  EXPECT_EQ(error_of(gpt + "parallel: {fsdp: 4}}\n" + tail),
            "s.yaml:2:86: the batch (6) must split evenly over the 4 devices of data x fsdp");
  EXPECT_EQ(error_of(gpt + "parallel: {tensor: 4}}\n" + tail),
            "s.yaml:2:95: tensor (4) must divide the model's heads (2), which each device holds a part of");
  const SweepConfig tensor = parse_sweep(gpt + "parallel: {data: 3, tensor: 2}}\n" + tail, "s.yaml");
  EXPECT_EQ(tensor.models[0].gpt.parallel.tensor, 2);
  EXPECT_EQ(tensor.models[0].gpt.parallel.devices(), 6);
  EXPECT_EQ(tensor.models[0].gpt.parallel.batch_shards(), 3);
  EXPECT_EQ(error_of(gpt + "dropout: 0.1, parallel: {data: 2}}\n" + tail),
            "s.yaml:2:100: parallel with dropout: each device would draw other masks than the whole model's");
}

}  // namespace
}  // namespace rematkit::sweep
