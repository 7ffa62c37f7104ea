#include "rematkit/sweep/sweep_config.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "rematkit/ir/byte_size.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/ir/nesting_limit.hpp"
#include "rematkit/io/text_file.hpp"
#include "rematkit/ir/near_names.hpp"

namespace rematkit::sweep {
namespace {

// Reads nodes of one file, failing at their line and column.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail_at_node(const YAML::Node& node, const std::string& message) const {
    fail_at(where(node), message);
  }

  // A map whose keys are all in `allowed`, each once: yaml-cpp keeps a repeated key's entries and
  // answers lookups with the first, so a second `policies:` would be dropped without a word.
  void expect_map(const YAML::Node& node, const std::string& what, const std::set<std::string>& allowed) const {
    if (!node.IsMap()) fail_at_node(node, what + " must be a map");
    std::map<std::string, SourceLocation> seen;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) fail_at_node(entry.first, "a key of " + what + " must be a name, not a list or a map");
      const std::string key = entry.first.as<std::string>();
      if (!allowed.count(key)) {
        std::string expected;
        for (const std::string& k : allowed) expected += (expected.empty() ? "" : ", ") + k;
        const std::vector<std::string> keys(allowed.begin(), allowed.end());
        fail_at_node(entry.first, "unknown key '" + key + "' in " + what + did_you_mean(key, keys) + " (expected: " +
                                      expected + ")");
      }
      if (const auto [first, inserted] = seen.emplace(key, where(entry.first)); !inserted)
        fail_at_node(entry.first, "'" + key + "' is given twice in " + what + " (first at " + first->second.str() + ")");
    }
  }

  const YAML::Node required(const YAML::Node& map, const std::string& key, const std::string& what) const {
    const YAML::Node node = map[key];
    if (!node) fail_at_node(map, what + " needs '" + key + "'");
    return node;
  }

  std::string text(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) fail_at_node(node, what + " must be a string");
    return node.Scalar();
  }

  int64_t integer(const YAML::Node& node, const std::string& what, int64_t min) const {
    int64_t value = 0;
    if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value))
      fail_at_node(node, what + " must be an integer, not '" + (node.IsScalar() ? node.Scalar() : "a " + kind(node)) + "'");
    if (value < min) fail_at_node(node, what + " must be at least " + std::to_string(min) + ", not " + std::to_string(value));
    return value;
  }

  double number(const YAML::Node& node, const std::string& what) const {
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value))
      fail_at_node(node, what + " must be a number, not '" + (node.IsScalar() ? node.Scalar() : "a " + kind(node)) + "'");
    return value;
  }

  // A share: 0.05 or 5%.
  double fraction(const YAML::Node& node, const std::string& what) const {
    if (node.IsScalar() && !node.Scalar().empty() && node.Scalar().back() == '%') {
      YAML::Node number_part(node.Scalar().substr(0, node.Scalar().size() - 1));
      double percent = 0;
      if (YAML::convert<double>::decode(number_part, percent)) return percent / 100;
      fail_at_node(node, what + " must be a share such as 5% or 0.05, not '" + node.Scalar() + "'");
    }
    return number(node, what);
  }

  // Seconds: 30, 30s or 2min, more than 0.
  double seconds(const YAML::Node& node, const std::string& what) const {
    std::string text = node.IsScalar() ? node.Scalar() : "";
    double scale = 1;
    if (text.size() > 3 && text.substr(text.size() - 3) == "min") scale = 60, text.resize(text.size() - 3);
    else if (text.size() > 1 && text.back() == 's') text.pop_back();
    double value = 0;
    if (text.empty() || !YAML::convert<double>::decode(YAML::Node(text), value) || !(value > 0))
      fail_at_node(node, what + " must be a time such as 30s or 2min, not '" + (node.IsScalar() ? node.Scalar() : "a " + kind(node)) + "'");
    return value * scale;
  }

  bool boolean(const YAML::Node& node, const std::string& what) const {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value))
      fail_at_node(node, what + " must be true or false, not '" + (node.IsScalar() ? node.Scalar() : "a " + kind(node)) + "'");
    return value;
  }

  SourceLocation where(const YAML::Node& node) const {
    return SourceLocation{source_, node.Mark().line + 1, node.Mark().column + 1};
  }

  std::vector<std::string> texts(const YAML::Node& node, const std::string& what) const {
    if (!node.IsSequence() || node.size() == 0) fail_at_node(node, what + " must be a non-empty list");
    std::vector<std::string> out;
    for (const YAML::Node& item : node) out.push_back(text(item, what + " entries"));
    return out;
  }

  // texts(), with each entry's place in the file.
  std::vector<SourceLocation> places(const YAML::Node& node) const {
    std::vector<SourceLocation> out;
    for (const YAML::Node& item : node) out.push_back(where(item));
    return out;
  }

  std::vector<int64_t> integers(const YAML::Node& node, const std::string& what, int64_t min) const {
    if (!node.IsSequence() || node.size() == 0) fail_at_node(node, what + " must be a non-empty list");
    std::vector<int64_t> out;
    for (const YAML::Node& item : node) out.push_back(integer(item, what + " entries", min));
    return out;
  }

  // A relative path in the file is relative to the file, so a sweep moves with its programs and outputs.
  std::string path(const YAML::Node& node, const std::string& what) const {
    const std::filesystem::path p = text(node, what);
    if (p.empty()) fail_at_node(node, what + " must not be empty");
    if (p.is_absolute() || source_ == "<default sweep>") return p.string();
    return (std::filesystem::path(source_).parent_path() / p).string();
  }

 private:
  static std::string kind(const YAML::Node& node) { return node.IsMap() ? "map" : node.IsSequence() ? "list" : "null"; }
  std::string source_;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

RematPlacement read_remat(const Reader& r, const YAML::Node& node) {
  const std::string remat = r.text(node, "remat");
  if (remat == "none") return RematPlacement::kNone;
  if (remat == "whole") return RematPlacement::kWhole;
  if (remat == "per_layer") return RematPlacement::kPerLayer;
  r.fail_at_node(node, "remat must be none, whole or per_layer, not '" + remat + "'");
}

// loop: unrolled | scan, and remat_scan: [a, b, ...] (whose product must be the layer count).
LayerLoop read_loop(const Reader& r, const YAML::Node& node, int64_t layers) {
  LayerLoop loop;
  if (const YAML::Node kind = node["loop"]) {
    const std::string text = r.text(kind, "loop");
    if (text == "scan") loop.kind = LayerLoop::Kind::kScan;
    else if (text != "unrolled") r.fail_at_node(kind, "loop must be unrolled or scan, not '" + text + "'");
  }
  if (const YAML::Node lengths = node["remat_scan"]) {
    if (node["loop"]) r.fail_at_node(lengths, "remat_scan is a loop of its own: give it without loop");
    if (node["remat"]) r.fail_at_node(lengths, "remat_scan places its own checkpoints: give it without remat");
    loop.kind = LayerLoop::Kind::kRematScan;
    loop.lengths = r.integers(lengths, "remat_scan", 1);
    int64_t product = 1;
    for (int64_t l : loop.lengths) product *= l;
    if (product != layers)
      r.fail_at_node(lengths, "remat_scan's lengths multiply to " + std::to_string(product) + ", not the " +
                                  std::to_string(layers) + " layers");
  }
  return loop;
}

// The scan lengths of a model's `loop:` over its `layers`, as the Flax configs take them (none: unrolled).
std::vector<int64_t> scan_lengths(const LayerLoop& loop, int64_t layers) {
  if (loop.kind == LayerLoop::Kind::kScan) return {layers};
  if (loop.kind == LayerLoop::Kind::kRematScan) return loop.lengths;
  return {};
}

ModelSpec read_mlp(const Reader& r, const YAML::Node& node, const std::string& name) {
  r.expect_map(node, "an mlp model", {"input", "widths", "depth", "width", "batch", "activation", "remat", "loop", "remat_scan"});
  ModelSpec m;
  m.name = name;
  m.kind = ModelSpec::Kind::kMlp;
  m.mlp.input = r.integer(r.required(node, "input", "an mlp model"), "input", 1);
  if (node["widths"]) {
    if (node["depth"] || node["width"]) r.fail_at_node(node, "an mlp model takes either widths or depth and width");
    m.mlp.widths = r.integers(node["widths"], "widths", 1);
  } else {
    const int64_t depth = r.integer(r.required(node, "depth", "an mlp model without widths"), "depth", 1);
    const int64_t width = r.integer(r.required(node, "width", "an mlp model without widths"), "width", 1);
    m.mlp.widths.assign(static_cast<size_t>(depth), width);
  }
  if (node["batch"]) m.mlp.batch = r.integer(node["batch"], "batch", 1);
  if (node["activation"]) {
    m.mlp.activation = r.text(node["activation"], "activation");
    if (m.mlp.activation != "relu" && m.mlp.activation != "tanh")
      r.fail_at_node(node["activation"], "activation must be relu or tanh, not '" + m.mlp.activation + "'");
  }
  if (node["remat"]) m.mlp.remat = read_remat(r, node["remat"]);
  m.mlp.loop = read_loop(r, node, static_cast<int64_t>(m.mlp.widths.size()));
  if (m.mlp.loop.kind != LayerLoop::Kind::kUnrolled)
    for (int64_t w : m.mlp.widths)
      if (w != m.mlp.input)
        r.fail_at_node(node, "a scanned mlp repeats one layer: every width must be the input's (" +
                                 std::to_string(m.mlp.input) + "), not " + std::to_string(w));
  return m;
}

// The sizes a transformer, a gpt and a llama share: layers, batch, sequence, model, heads (dividing model).
template <typename Blocks>
void read_block_sizes(const Reader& r, const YAML::Node& node, const std::string& what, Blocks& b) {
  b.layers = r.integer(r.required(node, "layers", what), "layers", 1);
  b.batch = r.integer(r.required(node, "batch", what), "batch", 1);
  b.sequence = r.integer(r.required(node, "sequence", what), "sequence", 1);
  b.model = r.integer(r.required(node, "model", what), "model", 1);
  b.heads = r.integer(r.required(node, "heads", what), "heads", 1);
  if (b.model % b.heads != 0)
    r.fail_at_node(node["heads"], "heads (" + std::to_string(b.heads) + ") must divide model (" + std::to_string(b.model) + ")");
}

// A token model's or a CNN's dtype: f32 or bf16.
DType read_dtype(const Reader& r, const YAML::Node& node) {
  const std::string dtype = r.text(node, "dtype");
  if (dtype != "f32" && dtype != "bf16") r.fail_at_node(node, "dtype must be f32 or bf16, not '" + dtype + "'");
  return dtype == "bf16" ? DType::kBF16 : DType::kF32;
}

// parallel: {data: D, fsdp: F, tensor: T}; the data x fsdp devices split the batch. `divides`: the
// model's widths that tensor parallelism splits (gpt: heads and mlp; llama: kv_heads and mlp).
ModelParallel read_parallel(const Reader& r, const YAML::Node& node, int64_t batch,
                            const std::vector<std::pair<std::string, int64_t>>& divides) {
  r.expect_map(node, "parallel", {"data", "fsdp", "tensor"});
  ModelParallel p;
  if (node["data"]) p.data = r.integer(node["data"], "data", 1);
  if (node["fsdp"]) p.fsdp = r.integer(node["fsdp"], "fsdp", 1);
  if (node["tensor"]) p.tensor = r.integer(node["tensor"], "tensor", 1);
  if (batch % p.batch_shards() != 0)
    r.fail_at_node(node, "the batch (" + std::to_string(batch) + ") must split evenly over the " +
                             std::to_string(p.batch_shards()) + " devices of data x fsdp");
  for (const auto& [width, size] : divides)
    if (size % p.tensor != 0)
      r.fail_at_node(node["tensor"], "tensor (" + std::to_string(p.tensor) + ") must divide the model's " + width + " (" +
                                         std::to_string(size) + "), which each device holds a part of");
  return p;
}

ModelSpec read_transformer(const Reader& r, const YAML::Node& node, const std::string& name) {
  const std::string what = "a transformer model";
  r.expect_map(node, what, {"layers", "batch", "sequence", "model", "heads", "mlp", "remat", "loop", "remat_scan"});
  ModelSpec m;
  m.name = name;
  m.kind = ModelSpec::Kind::kTransformer;
  TransformerConfig& t = m.transformer;
  read_block_sizes(r, node, what, t);
  t.mlp = r.integer(r.required(node, "mlp", what), "mlp", 1);
  if (node["remat"]) t.remat = read_remat(r, node["remat"]);
  const LayerLoop loop = read_loop(r, node, t.layers);
  t.scan_lengths = scan_lengths(loop, t.layers);
  // nn.remat_scan checkpoints its inner scans alone (flax/core/lift.py: remat_scan), so with one
  // length it places none; the gpt and the llama have always checkpointed each block there.
  if (loop.kind == LayerLoop::Kind::kRematScan) t.remat = RematPlacement::kNone;
  return m;
}

ModelSpec read_gpt(const Reader& r, const YAML::Node& node, const std::string& name) {
  const std::string what = "a gpt model";
  r.expect_map(node, what, {"layers", "batch", "sequence", "model", "heads", "mlp", "vocab", "dropout", "dtype", "remat",
                            "loop", "remat_scan", "parallel"});
  ModelSpec m;
  m.name = name;
  m.kind = ModelSpec::Kind::kGpt;
  GptModel& g = m.gpt;
  read_block_sizes(r, node, what, g);
  g.mlp = node["mlp"] ? r.integer(node["mlp"], "mlp", 1) : 4 * g.model;
  g.vocab = r.integer(r.required(node, "vocab", what), "vocab", 1);
  if (const YAML::Node dropout = node["dropout"]) {
    g.dropout = r.number(dropout, "dropout");
    if (!(g.dropout >= 0 && g.dropout < 1)) r.fail_at_node(dropout, "dropout must be in [0, 1)");
  }
  if (const YAML::Node dtype = node["dtype"]) g.dtype = read_dtype(r, dtype);
  if (node["remat"]) g.remat = read_remat(r, node["remat"]);
  g.scan_lengths = scan_lengths(read_loop(r, node, g.layers), g.layers);
  if (const YAML::Node parallel = node["parallel"]) {
    g.parallel = read_parallel(r, parallel, g.batch, {{"heads", g.heads}, {"mlp", g.mlp}});
    if (g.parallel.devices() > 1 && g.dropout > 0)
      r.fail_at_node(parallel, "parallel with dropout: each device would draw other masks than the whole model's");
  }
  return m;
}

ModelSpec read_llama(const Reader& r, const YAML::Node& node, const std::string& name) {
  const std::string what = "a llama model";
  r.expect_map(node, what, {"layers", "batch", "sequence", "model", "heads", "kv_heads", "mlp", "vocab", "dtype", "remat",
                            "loop", "remat_scan", "parallel"});
  ModelSpec m;
  m.name = name;
  m.kind = ModelSpec::Kind::kLlama;
  LlamaModel& l = m.llama;
  read_block_sizes(r, node, what, l);
  if ((l.model / l.heads) % 2 != 0)
    r.fail_at_node(node["heads"], "model / heads (" + std::to_string(l.model / l.heads) +
                                      ") must be even: rotary embeddings rotate pairs");
  l.kv_heads = node["kv_heads"] ? r.integer(node["kv_heads"], "kv_heads", 1) : l.heads;
  if (l.heads % l.kv_heads != 0)
    r.fail_at_node(node["kv_heads"], "kv_heads (" + std::to_string(l.kv_heads) + ") must divide heads (" + std::to_string(l.heads) + ")");
  // Llama's hidden width: 2/3 of 4 x model, rounded up to a multiple of 8.
  l.mlp = node["mlp"] ? r.integer(node["mlp"], "mlp", 1) : (8 * l.model / 3 + 7) / 8 * 8;
  l.vocab = r.integer(r.required(node, "vocab", what), "vocab", 1);
  if (const YAML::Node dtype = node["dtype"]) l.dtype = read_dtype(r, dtype);
  if (node["remat"]) l.remat = read_remat(r, node["remat"]);
  l.scan_lengths = scan_lengths(read_loop(r, node, l.layers), l.layers);
  if (const YAML::Node parallel = node["parallel"])
    l.parallel = read_parallel(r, parallel, l.batch, {{"kv_heads", l.kv_heads}, {"mlp", l.mlp}});
  return m;
}

ModelSpec read_cnn(const Reader& r, const YAML::Node& node, const std::string& name) {
  const std::string what = "a cnn model";
  r.expect_map(node, what, {"batch", "image", "channels", "blocks", "width", "downsample", "classes", "dtype", "remat"});
  ModelSpec m;
  m.name = name;
  m.kind = ModelSpec::Kind::kCnn;
  CnnModel& c = m.cnn;
  c.batch = r.integer(r.required(node, "batch", what), "batch", 1);
  c.image = r.integer(r.required(node, "image", what), "image", 1);
  c.channels = r.integer(r.required(node, "channels", what), "channels", 1);
  c.classes = r.integer(r.required(node, "classes", what), "classes", 1);
  // blocks: a list of widths, or a count with `width`.
  const YAML::Node blocks = r.required(node, "blocks", what);
  if (blocks.IsSequence()) {
    if (node["width"]) r.fail_at_node(node["width"], "a cnn model takes blocks as a list of widths or as a count with width, not both");
    c.widths = r.integers(blocks, "blocks", 1);
  } else {
    const int64_t count = r.integer(blocks, "blocks", 1);
    c.widths.assign(static_cast<size_t>(count), r.integer(r.required(node, "width", "a cnn model with a count of blocks"), "width", 1));
  }
  if (const YAML::Node downsample = node["downsample"]) c.downsample = r.boolean(downsample, "downsample");
  if (const YAML::Node dtype = node["dtype"]) c.dtype = read_dtype(r, dtype);
  if (node["remat"]) c.remat = read_remat(r, node["remat"]);
  return m;
}

ModelSpec read_program(const Reader& r, const YAML::Node& node, const std::string& name) {
  r.expect_map(node, "a program model", {"file", "wrt", "retarget"});
  ModelSpec m;
  m.name = name;
  m.kind = ModelSpec::Kind::kProgram;
  m.program.file = r.path(r.required(node, "file", "a program model"), "file");
  m.program.file_where = r.where(node["file"]);
  if (const YAML::Node wrt = node["wrt"]) {
    m.program.wrt = r.texts(wrt, "wrt");
    m.program.wrt_where = r.where(wrt);
  }
  if (const YAML::Node retarget = node["retarget"]) m.program.retarget = r.boolean(retarget, "retarget");
  return m;
}

SweepConfig read_sweep(const YAML::Node& root, const std::string& source) {
  const Reader r(source);
  if (!root || root.IsNull()) fail(source + ": the sweep file is empty");
  r.expect_map(root, "the sweep", {"models", "policies", "backends", "backend_options", "threads", "repetitions",
                                  "target_interval", "time_limit", "budget_time_limit", "seed", "max_memory", "plugins",
                                  "outputs"});

  SweepConfig config;
  config.source = source;
  const YAML::Node models = r.required(root, "models", "the sweep");
  if (!models.IsSequence() || models.size() == 0) r.fail_at_node(models, "models must be a non-empty list");
  std::set<std::string> names;
  for (const YAML::Node& entry : models) {
    r.expect_map(entry, "a model", {"name", "mlp", "transformer", "gpt", "llama", "cnn", "program"});
    const int kinds = entry["mlp"].IsDefined() + entry["transformer"].IsDefined() + entry["gpt"].IsDefined() +
                      entry["llama"].IsDefined() + entry["cnn"].IsDefined() + entry["program"].IsDefined();
    if (kinds != 1) r.fail_at_node(entry, "a model is one of 'mlp', 'transformer', 'gpt', 'llama', 'cnn' or 'program'");
    const std::string kind = entry["mlp"]           ? "mlp"
                             : entry["transformer"] ? "transformer"
                             : entry["gpt"]         ? "gpt"
                             : entry["llama"]       ? "llama"
                             : entry["cnn"]         ? "cnn"
                                                    : "program";
    const std::string name = entry["name"] ? r.text(entry["name"], "name") : kind + "_" + std::to_string(config.models.size());
    if (!names.insert(name).second) r.fail_at_node(entry, "two models are named '" + name + "'");
    if (kind == "mlp") config.models.push_back(read_mlp(r, entry["mlp"], name));
    else if (kind == "transformer") config.models.push_back(read_transformer(r, entry["transformer"], name));
    else if (kind == "gpt") config.models.push_back(read_gpt(r, entry["gpt"], name));
    else if (kind == "llama") config.models.push_back(read_llama(r, entry["llama"], name));
    else if (kind == "cnn") config.models.push_back(read_cnn(r, entry["cnn"], name));
    else config.models.push_back(read_program(r, entry["program"], name));
  }
  const YAML::Node policies = r.required(root, "policies", "the sweep");
  config.policies = r.texts(policies, "policies");
  config.policy_where = r.places(policies);
  const YAML::Node backends = r.required(root, "backends", "the sweep");
  for (const std::string& list : r.texts(backends, "backends")) config.backends.push_back(split_commas(list));
  config.backend_where = r.places(backends);
  if (const YAML::Node options = root["backend_options"]) {
    const std::vector<std::string> texts = r.texts(options, "backend_options");
    config.backend_option_where = r.places(options);
    for (size_t i = 0; i < texts.size(); ++i) {
      try {
        config.backend_options.push_back(parse_backend_option(texts[i]));
      } catch (const Error& e) {
        fail_at(config.backend_option_where[i], e.what());
      }
    }
  }
  if (root["threads"]) {
    config.threads.clear();
    for (int64_t t : r.integers(root["threads"], "threads", 1)) config.threads.push_back(static_cast<int>(t));
  }
  if (const YAML::Node repetitions = root["repetitions"]) {
    if (repetitions.IsScalar() && repetitions.Scalar() == "auto") config.auto_repetitions = true;
    else config.repetitions = static_cast<int>(r.integer(repetitions, "repetitions (a count or auto)", 1));
  }
  for (const char* key : {"target_interval", "time_limit"})
    if (root[key] && !config.auto_repetitions)
      r.fail_at_node(root[key], std::string(key) + " is for repetitions: auto");
  if (const YAML::Node interval = root["target_interval"]) {
    config.target_interval = r.fraction(interval, "target_interval");
    if (!(config.target_interval > 0 && config.target_interval < 1))
      r.fail_at_node(interval, "target_interval must be between 0 and 100%, such as 5%");
  }
  if (const YAML::Node limit = root["time_limit"]) config.time_limit_seconds = r.seconds(limit, "time_limit");
  if (const YAML::Node limit = root["budget_time_limit"])
    config.budget_time_limit_seconds = r.seconds(limit, "budget_time_limit");
  if (root["seed"]) config.seed = static_cast<uint64_t>(r.integer(root["seed"], "seed", 0));
  if (const YAML::Node limit = root["max_memory"]) {
    const std::optional<ByteSize> size = parse_byte_size(r.text(limit, "max_memory"));
    if (!size || size->bytes < 1 || size->bytes > 9.2e18)
      r.fail_at_node(limit, "max_memory must be a size in bytes, such as 8GiB or 512MiB");
    config.max_memory = static_cast<int64_t>(size->bytes);
  }
  if (const YAML::Node plugins = root["plugins"]) {
    for (const YAML::Node& item : plugins.IsSequence() ? plugins : YAML::Node())
      config.plugins.push_back(r.path(item, "plugins entries"));
    if (config.plugins.empty()) r.fail_at_node(plugins, "plugins must be a non-empty list of plugin files");
    config.plugin_where = r.places(plugins);
  }
  if (const YAML::Node outputs = root["outputs"]) {
    r.expect_map(outputs, "outputs", {"csv", "json", "charts", "report"});
    auto output = [&](const char* key, std::string& path, SourceLocation& where) {
      if (!outputs[key]) return;
      path = r.path(outputs[key], key);
      where = r.where(outputs[key]);
    };
    output("csv", config.csv, config.csv_where);
    output("json", config.json, config.json_where);
    output("charts", config.charts, config.charts_where);
    output("report", config.report, config.report_where);
  }
  return config;
}

// The document's depth, walked with a stack of its own. An alias is the node it names, so each
// node (told apart by its place) is walked once, however many aliases repeat it.
void check_nesting(const YAML::Node& root, const std::string& source) {
  std::vector<std::pair<YAML::Node, int>> open{{root, 1}};
  std::set<std::pair<int, int>> walked;
  while (!open.empty()) {
    auto [node, depth] = open.back();
    open.pop_back();
    if (!node.IsSequence() && !node.IsMap()) continue;
    const YAML::Mark mark = node.Mark();
    if (!walked.insert({mark.line, mark.column}).second) continue;
    if (depth > kMaxDocumentNesting)
      fail_too_deep(SourceLocation{source, mark.line + 1, mark.column + 1}, "YAML collections", kMaxDocumentNesting);
    for (const auto& item : node) {
      if (node.IsMap()) {
        open.emplace_back(item.first, depth + 1);
        open.emplace_back(item.second, depth + 1);
      } else {
        open.emplace_back(item, depth + 1);
      }
    }
  }
}

}  // namespace

BackendOptions backend_options_of(const SweepConfig& config, size_t list, const PluginRegistry& plugins) {
  const std::vector<std::string>& names = config.backends[list];
  BackendOptions options{names, &plugins};
  for (const BackendOptions::BackendOption& option : config.backend_options)
    if (std::find(names.begin(), names.end(), option.backend) != names.end()) options.backend_options.push_back(option);
  return options;
}

SweepConfig parse_sweep(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own bound lies past ours
    fail_too_deep(SourceLocation{source, e.mark.line + 1, e.mark.column + 1}, "YAML collections", kMaxDocumentNesting);
  } catch (const YAML::Exception& e) {
    fail_at(SourceLocation{source, e.mark.line + 1, e.mark.column + 1}, "not valid YAML: " + e.msg);
  }
  check_nesting(root, source);
  // The reader checks each node's kind before it converts it; what it still cannot convert (a
  // map used as a key, say, found by fuzzing) is yaml-cpp's exception, told at its place.
  try {
    return read_sweep(root, source);
  } catch (const YAML::Exception& e) {
    fail_at(SourceLocation{source, e.mark.line + 1, e.mark.column + 1}, "cannot read this entry: " + e.msg);
  }
}

SweepConfig load_sweep(const std::string& path) {
  return parse_sweep(read_text_file(path, "sweep file"), path);
}

}  // namespace rematkit::sweep
