// rematkit_step_timing: the MLP training step (training_step_bench.cpp's: Dense(D,F) -> relu ->
// Dense(F,F) -> relu -> Dense(F,F), a checkpoint per layer, loss sum(y), SGD) per policy, timed
// until the medians are known to a few percent, so that differences of 5% between policies, or
// against a peer, can be told from noise. Google Benchmark reports a mean or a median of a few
// repetitions, run one configuration after another; here the policies and a plain GEMM of the same
// (B x D)(D x F) interleave in shuffled rounds (interleaved_rounds.hpp) until the 95% interval of
// every median is within --target of it, or --max-seconds. Prints a table; --json writes the rows.
// --transformer L,B,S,D,H,M times the sweep's transformer instead (torch_transformer.py's model),
// --gpt L,B,S,D,H,V[,M] the sweep's gpt (torch_gpt.py's model), --cnn B,I,C,W1/W2/..,D,K the
// sweep's CNN (torch_cnn.py's model; no GEMM beside it), --scanned-mlp DEPTH,WIDTH,BATCH a deep MLP
// unrolled and scanned, interleaved (what reading the scan's rows costs). --bf16-too times the gpt,
// llama or CNN in bf16 too, interleaved with the f32 steps. --step-times N then says where each
// step's time goes, per backend, primitives and dtype.
#include <tbb/global_control.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemm_kernel.hpp"
#include "interleaved_rounds.hpp"
#include "quiet_wait.hpp"
#include "step_workloads.hpp"
#include "rematkit/analysis/step_times.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/median_interval.hpp"
#include "rematkit/sweep/peak_rss.hpp"
#include "rematkit/sweep/sweep_models.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/runtime/training_step.hpp"

namespace {

using namespace rematkit;
using nlohmann::json;

const char* const kBaseline = "everything_saveable";

// One policy's step with what it needs alive: the step reads the linearization, which reads the program.
struct PolicyStep {
  PolicyStep(const sweep::ModelSpec& model, const std::string& policy, const BackendOptions& backends) {
    instance = sweep::instantiate(model, policy, 0);
    LinearizeOptions options;
    options.policies = &default_plugins().policies();
    options.differentiate = instance.trained;  // the params, as the peers: no gradient for the data
    lin = linearize(instance.program, options);
    step = std::make_unique<TrainingStep>(lin, backends, instance.trained, 1e-6);
    // Into the arena an argument at a time, each let go once loaded: the process's memory is the
    // step's, as the peers' is theirs.
    step->set_constants(instance.constants);
    for (size_t a = 0; a < instance.arguments.size(); ++a) {
      step->set_argument(a, instance.arguments[a]);
      std::vector<double>().swap(instance.arguments[a].data);
    }
    instance.constants = {};
    instance.arguments = {};
  }
  sweep::ModelInstance instance;
  Linearization lin;
  std::unique_ptr<TrainingStep> step;
};

struct Options {
  std::vector<int> sizes{0, 1, 2, 3};
  std::vector<int64_t> transformer;  // L,B,S,D,H,M: the transformer instead of the MLP sizes
  std::string cnn;  // B,I,C,W1/W2/..,D,K or "default": the CNN instead of the MLP sizes
  std::string gpt;  // L,B,S,D,H,V[,M] or "default": the gpt instead of the MLP sizes
  std::string llama;  // L,B,S,D,H,K,V[,M] or "default": the llama instead of the MLP sizes
  std::vector<int64_t> scanned_mlp;  // DEPTH,WIDTH,BATCH: a deep MLP unrolled and scanned
  std::vector<int> threads{1, 2};
  std::vector<std::string> policies{kBaseline, "dots_with_no_batch_dims_saveable", "nothing_saveable"};
  std::vector<std::string> backends{"onednn", "highway", "reference"};
  std::vector<std::string> backend_options;  // BACKEND.NAME=VALUE, each (parse_backend_option)
  bench::RoundsOptions rounds;
  double quiet_cores = 0.15, max_wait_seconds = 0;
  std::string json_path;
  bool unfused_too = false;  // each policy also with BackendOptions::Fusion::kOff
  bool bf16_too = false;     // the gpt, llama or CNN also in bf16 (named "POLICY, bf16")
  int step_times = 0;        // steps per contender run again with their steps timed (0: none)
  size_t step_time_rows = 15;  // the longest rows of each breakdown printed
};


// The same model in bf16 (its dtype: the params, the input and every activation), timed beside the
// f32 one so that the bf16-over-f32 ratio comes from one sitting.
sweep::ModelSpec in_bf16(sweep::ModelSpec model) {
  switch (model.kind) {
    case sweep::ModelSpec::Kind::kGpt: model.gpt.dtype = DType::kBF16; break;
    case sweep::ModelSpec::Kind::kLlama: model.llama.dtype = DType::kBF16; break;
    case sweep::ModelSpec::Kind::kCnn: model.cnn.dtype = DType::kBF16; break;
    case sweep::ModelSpec::Kind::kMlp: case sweep::ModelSpec::Kind::kTransformer: case sweep::ModelSpec::Kind::kProgram:
      throw std::invalid_argument("--bf16-too takes a gpt, a llama or a CNN");
  }
  return model;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Milliseconds to three significant digits, as the tables of docs/performance.md write them.
std::string ms_text(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ms >= 100 ? "%.0f" : "%#.3g", ms);  // 11.0, not 11; 150, not 150.
  return buf;
}

std::string pct_text(const sweep::MedianInterval& m) { return "±" + fixed(100 * bench::relative_half_width(m), 1) + "%"; }

std::string now_utc() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

json interval_json(const sweep::MedianInterval& m) {
  return {{"median_ms", m.median}, {"low_ms", m.low}, {"high_ms", m.high}, {"coverage", m.coverage},
          {"half_width_share", bench::relative_half_width(m)}};
}

// Written in full after every configuration, through a temporary file and a rename, so that a run
// stopped half-way (or a reader at the wrong moment) finds the last complete file, never half of one.
void write_json_atomically(const std::string& path, const json& doc) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << doc.dump(1) << '\n';
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

// Where each contender's step spends its time: `options.step_times` more steps with every step
// timed (StepRunner::time_steps), summed per backend, primitives and dtype. Printed after the
// table (returned as text) and kept in the rows' JSON.
std::string step_time_breakdown(const Options& options, const std::string& shape, int threads, const std::string& name,
                                TrainingStep& step, json& row) {
  step.time_steps(true);
  for (int i = 0; i < options.step_times; ++i) step.run();
  step.time_steps(false);
  const std::vector<StepTimeRow> rows = step_time_rows(step.runner().program(), step.runner().step_ns());
  int64_t total = 0;
  for (const StepTimeRow& r : rows) total += r.ns;
  const double per_step = 1e-6 / options.step_times;  // ns summed over the steps -> ms per step
  std::string text = "\n" + shape + ", " + std::to_string(threads) + " thread(s), " + name + ": " +
                     ms_text(static_cast<double>(total) * per_step) + " ms a step in its steps\n\n" +
                     "| backend | primitives | dtype | steps | ms a step | share |\n|---|---|---|---|---|---|\n";
  json out = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const StepTimeRow& r = rows[i];
    const double ms = static_cast<double>(r.ns) * per_step, share = total ? static_cast<double>(r.ns) / total : 0;
    out.push_back({{"backend", r.backend}, {"primitives", r.what}, {"dtype", r.dtype}, {"steps", r.steps}, {"ms", ms}});
    if (i < options.step_time_rows)
      text += "| " + r.backend + " | " + r.what + " | " + r.dtype + " | " + std::to_string(r.steps) + " | " + ms_text(ms) +
              " | " + fixed(100 * share, 1) + "% |\n";
  }
  row["step_times"] = std::move(out);
  return text;
}

// Times one (workload, threads) configuration: its rows are printed and returned as JSON; each
// step's --step-times breakdown is added to `breakdowns`.
json time_configuration(const Options& options, const bench::Workload& work, int threads, uint64_t seed,
                        std::string& breakdowns) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
  const sweep::PeakRss rss;  // the steps' arenas and what planning them took
  BackendOptions backends{options.backends, &default_plugins()};
  backends.threads = threads;
  for (const std::string& option : options.backend_options) backends.backend_options.push_back(parse_backend_option(option));
  std::vector<std::unique_ptr<PolicyStep>> steps;
  std::vector<std::string> names;  // per step: its policy, and " unfused" for a step with fusion off
  BackendOptions unfused = backends;
  unfused.fusion = BackendOptions::Fusion::kOff;
  for (const std::string& policy : options.policies) {
    steps.push_back(std::make_unique<PolicyStep>(work.model, policy, backends));
    names.push_back(policy);
    for (const auto& [name, model] : work.also) {
      steps.push_back(std::make_unique<PolicyStep>(model, policy, backends));
      names.push_back(policy + ", " + name);
    }
    if (!options.unfused_too) continue;
    steps.push_back(std::make_unique<PolicyStep>(work.model, policy, unfused));
    names.push_back(policy + " unfused");
  }
  // The yardstick, where the workload has one and a backend runs it.
  std::unique_ptr<bench::Gemm> gemm_product;
  if (work.has_gemm())
    gemm_product = std::make_unique<bench::Gemm>(options.backends, 0, work.gemm_m, work.gemm_k, work.gemm_n, threads);
  bench::Gemm* const gemm = gemm_product && gemm_product->ok() ? gemm_product.get() : nullptr;

  // Kept observable so that no step or product can be optimised away.
  static volatile float sink = 0;
  std::vector<bench::Contender> contenders;
  for (size_t i = 0; i < steps.size(); ++i)
    contenders.emplace_back(names[i], [s = steps[i]->step.get()] { sink = sink + s->run(); });
  if (gemm) contenders.emplace_back("gemm", [gemm] { sink = sink + gemm->run(); });

  bench::RoundsOptions rounds = options.rounds;
  rounds.seed = seed;
  const bench::QuietWait quiet =
      options.max_wait_seconds > 0 ? bench::wait_until_quiet(options.quiet_cores, options.max_wait_seconds) : bench::QuietWait{};
  const sweep::MachineLoad load;
  const bench::RoundsResult result = bench::run_rounds(contenders, rounds);
  const double others = load.others_share().value_or(-1);  // -1: unknown, as the JSON says

  const double flops = work.flops;
  const bench::Contender* baseline = nullptr;
  for (const bench::Contender& c : contenders)
    if (c.name == kBaseline) baseline = &c;
  const double gemm_gflops = gemm ? gemm->flops() / (contenders.back().interval.median * 1e6) : 0;

  json rows = json::array();
  const std::string& shape = work.label;
  for (size_t i = 0; i < contenders.size(); ++i) {
    const bench::Contender& c = contenders[i];
    const bool is_gemm = gemm && i == steps.size();
    const bool reached = bench::within(c, rounds);
    const double gflops = (is_gemm ? gemm->flops() : flops) / (c.interval.median * 1e6);
    json row = work.keys;
    row.update(json{{"threads", threads},
                    {"name", c.name},
                    {"kind", is_gemm ? "gemm" : "step"},
                    {"samples", c.ms.size()},
                    {"steps_per_sample", c.batch},
                    {"target_reached", reached},
                    {"gflops", gflops}});
    row.update(interval_json(c.interval));
    std::string ratio = "", of_gemm = "", peak = "";
    if (is_gemm) {
      row["backend"] = gemm->backend();
      row["flops"] = gemm->flops();
    } else {
      const TrainingStep& step = *steps[i]->step;
      row["backends"] = options.backends;
      row["flops_nominal"] = flops;
      row["measured_peak_MiB"] = static_cast<double>(step.measured_peak(MemorySpace::kDevice)) / 1048576.0;
      row["predicted_peak_MiB"] = static_cast<double>(step.predicted_peak(MemorySpace::kDevice)) / 1048576.0;
      peak = fixed(row["measured_peak_MiB"].get<double>(), 2);
      if (options.step_times > 0)
        breakdowns += step_time_breakdown(options, shape, threads, c.name, *steps[i]->step, row);
      if (gemm) {
        row["share_of_gemm_gflops"] = gflops / gemm_gflops;
        of_gemm = fixed(100 * gflops / gemm_gflops, 0) + "%";
      }
      if (baseline && baseline != &c) {
        const double r = c.interval.median / baseline->interval.median;
        row["ratio_to_baseline"] = r;
        // The widest ratio the two intervals allow: a verdict needs them apart, not just the medians.
        row["ratio_low"] = c.interval.low / baseline->interval.high;
        row["ratio_high"] = c.interval.high / baseline->interval.low;
        row["versus_baseline"] = sweep::versus(c.interval, baseline->interval);
        ratio = fixed(r, 3) + "x (" + pct_text(c.interval) + " / " + pct_text(baseline->interval) + ", " +
                sweep::versus(c.interval, baseline->interval) + ")";
      } else if (baseline == &c) {
        ratio = "1 (baseline)";
      }
    }
    rows.push_back(row);
    std::cout << "| " << shape << " | " << threads << " | " << (is_gemm ? "GEMM on " + gemm->backend() : c.name) << " | "
              << ms_text(c.interval.median) << " | " << pct_text(c.interval) << (reached ? "" : " *") << " | "
              << fixed(gflops, gflops < 10 ? 2 : 1) << " | " << ratio << " | " << of_gemm << " | " << peak << " |\n";
  }
  std::cout.flush();
  std::cerr << shape << " on " << threads << " thread(s): " << result.rounds << " rounds in " << fixed(result.seconds, 1) << " s, "
            << (result.converged ? "every interval within target" : "stopped at --max-seconds")
            << (options.max_wait_seconds > 0 ? ", after waiting " + fixed(quiet.seconds, 0) + " s for a quiet machine" : "") << ", others' load "
            << (others < 0 ? std::string("unknown") : fixed(100 * others, 0) + "% of the machine") << "\n";
  json configuration = work.keys;
  configuration.update(json{{"threads", threads},
                            {"rounds", result.rounds},
                            {"seconds", result.seconds},
                            {"converged", result.converged},
                            {"others_load_share", others},
                            {"waited_for_quiet_s", quiet.seconds},
                            {"others_cores_before", quiet.cores},
                            {"process_peak_rss_MiB", static_cast<double>(rss.bytes().value_or(0)) / 1048576.0},
                            {"rows", rows}});
  return configuration;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"The MLP training step per policy (or the transformer's, the gpt's, the llama's or the CNN's), interleaved with a plain GEMM, timed until every median's "
               "95% interval is within --target (or --max-seconds)."};
  app.add_option("--sizes", options.sizes, "indices into (1,64,64), (32,512,512), (256,1024,1024), (1024,2048,2048)")
      ->delimiter(',')
      ->check(CLI::Range(0, 3));
  app.add_option("--transformer", options.transformer,
                 "L,B,S,D,H,M: the sweep's transformer (torch_transformer.py's model) instead of the MLP sizes")
      ->delimiter(',')
      ->expected(6);
  app.add_option("--cnn", options.cnn,
                 "B,I,C,W1/W2/..,D,K or 'default' (" + std::string(bench::kDefaultCnn) +
                     "): the sweep's CNN (torch_cnn.py's model) instead of the MLP sizes")
      ->excludes("--transformer");
  app.add_option("--gpt", options.gpt,
                 "L,B,S,D,H,V[,M] or 'default' (" + std::string(bench::kDefaultGpt) +
                     "): the sweep's gpt (torch_gpt.py's model, dropout 0.1) instead of the MLP sizes")
      ->excludes("--transformer")
      ->excludes("--cnn");
  app.add_option("--llama", options.llama,
                 "L,B,S,D,H,K,V[,M] or 'default' (" + std::string(bench::kDefaultLlama) +
                     "): the sweep's llama (torch_llama.py's model) instead of the MLP sizes")
      ->excludes("--transformer")
      ->excludes("--cnn")
      ->excludes("--gpt");
  app.add_option("--scanned-mlp", options.scanned_mlp,
                 "DEPTH,WIDTH,BATCH: a tanh MLP of DEPTH WIDTH-wide layers unrolled and, beside it, scanned (sqrt_n_sweep.yaml's is 64,128,2048) instead of the MLP sizes")
      ->delimiter(',')
      ->expected(3)
      ->excludes("--transformer")
      ->excludes("--cnn")
      ->excludes("--gpt")
      ->excludes("--llama");
  app.add_option("--threads", options.threads, "thread counts, one configuration each")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--policies", options.policies, "policies, interleaved; ratios are to everything_saveable")->delimiter(',');
  app.add_option("--backends", options.backends, "one preference list, for the steps and the GEMM")->delimiter(',');
  app.add_option("--backend-option", options.backend_options,
                 "BACKEND.NAME=VALUE: the steps' backend created with this option of its own (repeatable; e.g. "
                 "onednn.weights_layout=as_it_lies; the GEMM keeps each backend's defaults)");
  app.add_option("--target", options.rounds.target, "the most a 95% interval's half-width may be, as a share of its median")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-seconds", options.rounds.max_seconds, "cap on warm-up and rounds per (size, threads)")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-seconds", options.rounds.min_seconds, "time each (size, threads) at least this long");
  app.add_option("--min-samples", options.rounds.min_samples, "samples per contender before the target can count as reached");
  app.add_option("--min-sample-ms", options.rounds.min_sample_ms, "a sample is a batch of steps lasting at least this");
  app.add_option("--max-wait-seconds", options.max_wait_seconds,
                 "before each (size, threads), wait up to this long for other processes to use under --quiet-cores (0: no wait)");
  app.add_option("--quiet-cores", options.quiet_cores, "what counts as quiet, in cores (the peers' PEERS_QUIET_CORES)");
  app.add_flag("--unfused-too", options.unfused_too,
               "also time each policy with fusion off (named 'POLICY unfused'), interleaved with the rest: what fusion saves");
  app.add_flag("--bf16-too", options.bf16_too,
               "also time each policy on the gpt, llama or CNN in bf16 (named 'POLICY, bf16'), interleaved with the f32 steps");
  app.add_option("--step-times", options.step_times,
                 "then run N more steps of each policy with each step timed, and print where the time goes: per backend, "
                 "primitives and dtype, longest first")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--step-time-rows", options.step_time_rows, "how many rows of each --step-times breakdown to print");
  app.add_option("--json", options.json_path, "write the rows here (rewritten after every configuration)");
  CLI11_PARSE(app, argc, argv);

  try {
    const std::vector<std::string> built = default_plugins().backend_names();
    for (const std::string& b : options.backends)
      if (std::find(built.begin(), built.end(), b) == built.end()) {
        std::cerr << "rematkit_step_timing: backend '" << b << "' is not built here\n";
        return 2;
      }
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    json doc = {{"command", command},
                {"started", now_utc()},
                {"cpu", cpu_model()},
                {"target", options.rounds.target},
                {"confidence", options.rounds.confidence},
                {"max_seconds", options.rounds.max_seconds},
                {"min_seconds", options.rounds.min_seconds},
                {"min_samples", options.rounds.min_samples},
                {"min_sample_ms", options.rounds.min_sample_ms},
                {"backends", options.backends},
                {"configurations", json::array()}};

    std::string backends;
    for (const std::string& b : options.backends) backends += (backends.empty() ? "" : ",") + b;
    const bool cnn = !options.cnn.empty(), transformer = !options.transformer.empty(), gpt = !options.gpt.empty(),
               llama = !options.llama.empty();
    // Before the table's header, so that a malformed model prints only its error.
    std::vector<bench::Workload> workloads;
    if (cnn) workloads.push_back(bench::cnn_workload(options.cnn));
    else if (gpt) workloads.push_back(bench::gpt_workload(options.gpt));
    else if (llama) workloads.push_back(bench::llama_workload(options.llama));
    else if (transformer) workloads.push_back(bench::transformer_workload(options.transformer));
    else if (!options.scanned_mlp.empty()) workloads.push_back(bench::scanned_mlp_workload(options.scanned_mlp));
    else
      for (int s : options.sizes) workloads.push_back(bench::mlp_workload(s));
    if (options.bf16_too)
      for (bench::Workload& w : workloads) w.also.emplace_back("bf16", in_bf16(w.model));
    std::cout << (cnn ? "CNN" : gpt ? "GPT" : llama ? "Llama" : transformer ? "Transformer" : "MLP") << " training step on " << backends << ", " << cpu_model() << ", " << now_utc() << "; median of per-step times, "
              << "95% interval, target ±" << fixed(100 * options.rounds.target, 1) << "%; GFLOP/s of the nominal 3 x forward products "
              << (cnn ? "3*2*(the convolutions' and the head's multiply-adds), no GEMM beside it"
                  : gpt         ? "3*B*S*(L*(8*D^2+4*S*D+4*D*M)+2*D*V) (the GEMM's: 2*m*k*n)"
                  : llama       ? "3*B*S*(L*(4*D^2+4*D*K*D/H+4*S*D+6*D*M)+2*D*V) (the GEMM's: 2*m*k*n)"
                  : transformer ? "3*L*B*S*(8*D^2+4*S*D+4*D*M) (the GEMM's: 2*m*k*n)"
                  : !options.scanned_mlp.empty() ? "6*B*depth*W^2 (the GEMM's: 2*m*k*n)"
                                : "6*B*(D*F+2*F^2) (the GEMM's: 2*m*k*n)") << "\n\n"
              << "| " << (cnn ? "model (B, I, C, widths, D, K)" : gpt ? "model (L, B, S, D, H, V, M)" : llama ? "model (L, B, S, D, H, K, V, M)" : transformer ? "model (L, B, S, D, H, M)" : !options.scanned_mlp.empty() ? "model (depth, W, B)" : "(B, D, F)") << " | threads | policy | median ms | 95% interval | GFLOP/s | vs " << kBaseline
              << " (intervals) | of GEMM's GFLOP/s | peak MiB |\n|---|---|---|---|---|---|---|---|---|\n";
    uint64_t seed = 0;
    bool all_reached = true;
    std::string breakdowns;
    for (const bench::Workload& work : workloads)
      for (int t : options.threads) {
        json configuration = time_configuration(options, work, t, seed++, breakdowns);
        all_reached = all_reached && configuration["converged"].get<bool>();
        doc["configurations"].push_back(std::move(configuration));
        if (!options.json_path.empty()) write_json_atomically(options.json_path, doc);
      }
    if (!all_reached)
      std::cout << "\n* target not reached within --max-seconds " << fixed(options.rounds.max_seconds, 0)
                << ": the interval shown is the one reached\n";
    std::cout << breakdowns;
  } catch (const std::exception& e) {
    std::cerr << "rematkit_step_timing: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
