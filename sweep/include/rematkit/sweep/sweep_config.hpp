// A sweep file: which models, policies, backends and thread counts to cross, how often to time
// each configuration, and where to write the results.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/llama.hpp"
#include "rematkit/flax/remat_placement.hpp"
#include "rematkit/flax/transformer.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

// How an MLP's identical layers are traced (`loop:` and `remat_scan:` in a sweep file): unrolled,
// in one lax.scan with the params stacked (Flax's nn.scan; `remat` then puts the checkpoint inside
// the body, per layer, or around the scan, whole), or in nested scans with a checkpoint around each
// inner one (nn.remat_scan(lengths=...), whose checkpoints replace `remat`'s). The token models and
// the transformer hold the same as their configs' scan_lengths.
struct LayerLoop {
  enum class Kind { kUnrolled, kScan, kRematScan } kind = Kind::kUnrolled;
  std::vector<int64_t> lengths;  // kRematScan: their product is the number of layers
};

struct MlpModel {
  int64_t input = 0;            // features of x
  std::vector<int64_t> widths;  // one Dense layer each
  int64_t batch = 1;
  std::string activation = "relu";  // relu or tanh, between layers (after every layer when scanned)
  RematPlacement remat = RematPlacement::kPerLayer;
  LayerLoop loop;  // scanned: every width must be the input's
};

// A token model's step over a mesh (flax/parallel_step.hpp): the batch split over data x fsdp
// devices; under fsdp each param split over 'fsdp' and gathered in the layer that uses it; under
// tensor, Megatron's column- and row-parallel attention and MLP. 1 x 1 x 1: one device, no shard_map.
struct ModelParallel {
  int64_t data = 1, fsdp = 1, tensor = 1;
  int64_t batch_shards() const { return data * fsdp; }
  int64_t devices() const { return data * fsdp * tensor; }
};

// rematkit::build_gpt's model (flax/gpt.hpp), on the mesh `parallel` (not with dropout). The
// config is the whole model's: its `tensor` stays 1, and the sweep builds a device's share from
// `parallel`. A sweep file's defaults are the reader's (docs/sweeps.md), not GptConfig's.
struct GptModel : GptConfig {
  ModelParallel parallel;
};

// rematkit::build_llama's model (flax/llama.hpp), on the mesh `parallel`, as GptModel.
struct LlamaModel : LlamaConfig {
  ModelParallel parallel;
};

// ModelBuilder's ResNet-style CNN (flax/model_builder.hpp): on images f32[batch, image, image,
// channels] (NHWC), one resnet_block per width, each after the first with stride 2 when
// `downsample`, global average pooling, Dense(classes); loss sum(y^2); remat per block.
struct CnnModel {
  int64_t batch = 1, image = 8, channels = 3, classes = 10;
  std::vector<int64_t> widths;  // one block each
  bool downsample = false;
  RematPlacement remat = RematPlacement::kPerLayer;
  DType dtype = DType::kF32;  // f32 or bf16: the input, the params and every activation
};

struct ProgramModel {
  std::string file;  // a jaxpr file (a relative one resolved against the sweep file); the policy wraps it
  SourceLocation file_where;
  // wrt: the arguments trained (names or indices; empty: every floating one), the others held.
  std::vector<std::string> wrt;
  SourceLocation wrt_where;
  // retarget: the policy replaces the policies of the program's checkpoints instead of wrapping it.
  bool retarget = false;
};

struct ModelSpec {
  std::string name;
  enum class Kind { kMlp, kTransformer, kGpt, kLlama, kCnn, kProgram } kind = Kind::kMlp;
  MlpModel mlp;
  TransformerConfig transformer;  // rematkit::build_transformer's model (flax/transformer.hpp)
  GptModel gpt;
  LlamaModel llama;
  CnnModel cnn;
  ProgramModel program;
};

struct SweepConfig {
  std::string source;  // the file name, or "<default sweep>"
  std::vector<ModelSpec> models;
  std::vector<std::string> policies;
  std::vector<std::vector<std::string>> backends;  // each a preference list: "highway,reference"
  // `backend_options: [onednn.weights_layout=as_it_lies]`: a backend's own options, each given to
  // that backend in every list that has it (BackendOptions::backend_options).
  std::vector<BackendOptions::BackendOption> backend_options;
  std::vector<int> threads{1};
  // Timed steps per configuration; the repetitions of a model, backend list and thread count's
  // policies interleave. With `repetitions: auto`, rounds go on until every median's 95% interval
  // is narrower than `target_interval` of the median, or the group has been timed `time_limit_seconds`.
  int repetitions = 5;
  bool auto_repetitions = false;
  double target_interval = 0.05;
  double time_limit_seconds = 10;
  // The budget solver's time for a model's budget(...) rows on one backend list (all its budgets
  // at once; rematkit solve --time-limit).
  double budget_time_limit_seconds = 8;
  uint64_t seed = 0;
  // `max_memory: 8GiB`: the most a configuration's step may take; one over it is refused before it
  // allocates and its row says so (memory_limit.hpp). nullopt: the machine's available memory.
  std::optional<int64_t> max_memory{};
  std::vector<std::string> plugins;  // plugin files the sweep needs (relative ones against the sweep file)
  std::string csv, json;  // output files (relative ones resolved against the sweep file); empty: none
  std::string charts;     // a folder for one SVG chart per model; empty: none
  std::string report;     // a folder for index.html, the sweep as one self-contained page; empty: none
  // Where each entry is in the file, so that checks made before the first run point at it.
  std::vector<SourceLocation> policy_where, backend_where, backend_option_where, plugin_where;
  SourceLocation csv_where, json_where, charts_where, report_where;
};

// Backend list `list` of `config` as the API takes it: its names, and the sweep's backend options
// for the backends it has.
REMATKIT_SWEEP_EXPORT BackendOptions backend_options_of(const SweepConfig& config, size_t list,
                                                        const PluginRegistry& plugins);

// Reads a sweep from YAML text; `source` names it in errors. Unknown keys, missing keys and bad
// values are bad-input errors at SOURCE:LINE:COL.
REMATKIT_SWEEP_EXPORT SweepConfig parse_sweep(const std::string& yaml, const std::string& source);
REMATKIT_SWEEP_EXPORT SweepConfig load_sweep(const std::string& path);

// The sweep `rematkit sweep` runs without a file (sweep/default_sweep.yaml).
REMATKIT_SWEEP_EXPORT const std::string& default_sweep_yaml();

}  // namespace rematkit::sweep
