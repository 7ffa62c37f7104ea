// rematkit_product_backends_bench: product backends (onednn, blas, xsmm, ...) side by side on the
// products training steps really run, and on whole steps. What settled whether blas and xsmm join
// the default list (docs/performance.md, "blas and xsmm, settled").
//
// --products: every distinct f32 dot_general of each sweep model's training step (forward,
// input-gradient and weight-gradient products, with the dimension numbers the linearization gives
// them, so a transposed operand is read as the step reads it), prepared on each backend as a step
// program prepares it and timed in interleaved rounds (interleaved_rounds.hpp), per thread count.
// --steps: each model's whole training step (everything_saveable, SGD) on each backend list,
// interleaved the same way. Prints markdown tables.
#include <tbb/global_control.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gemm_kernel.hpp"
#include "interleaved_rounds.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/runtime/training_step.hpp"
#include "rematkit/sweep/machine_load.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace {

using namespace rematkit;

struct Options {
  std::string sweep_file;  // empty: the default sweep
  std::vector<std::string> models;  // empty: all of the sweep's
  bool products = false, steps = false;
  std::vector<std::string> backends{"onednn", "blas", "xsmm"};
  std::vector<std::string> lists{"onednn,highway,reference", "blas,onednn,highway,reference",
                                 "xsmm,onednn,highway,reference"};
  std::vector<int> threads{1, 2};
  double max_seconds = 8;  // per product or step and thread count
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// One distinct product: its types and params, and the models and passes it occurs in.
struct Product {
  Params params;
  std::vector<Type> inputs, outputs;
  std::map<std::string, int> where;  // "model fwd" / "model bwd": occurrences
  double flops = 0;
  std::string text() const {
    const DotDims d = dot_dims(params, {});
    return inputs[0].str() + " x " + inputs[1].str() + " (" + joined(d.lhs_contract) + "),(" +
           joined(d.rhs_contract) + ")" + (d.lhs_batch.empty() ? "" : " b(" + joined(d.lhs_batch) + "),(" + joined(d.rhs_batch) + ")");
  }
};

sweep::SweepConfig sweep_of(const Options& o) {
  return o.sweep_file.empty() ? sweep::parse_sweep(sweep::default_sweep_yaml(), "<default sweep>")
                              : sweep::load_sweep(o.sweep_file);
}

bool chosen(const Options& o, const std::string& model) {
  return o.models.empty() || std::find(o.models.begin(), o.models.end(), model) != o.models.end();
}

Linearization linearization_of(const sweep::ModelProgram& m) {
  LinearizeOptions options;
  options.policies = &default_plugins().policies();
  options.policy = m.whole_program_policy;
  options.differentiate = m.trained;  // the params, as a sweep trains them
  return linearize(m.program, options);
}

// The f32 products of every chosen model's step, in order of first occurrence.
std::vector<Product> distinct_products(const Options& o) {
  std::vector<Product> products;
  for (const sweep::ModelSpec& model : sweep_of(o).models) {
    if (!chosen(o, model.name)) continue;
    const Linearization lin = linearization_of(sweep::model_program(model, "everything_saveable"));
    // The equations the step runs: the forward pass, then the backward pass with its recomputation.
    std::vector<std::pair<int, const char*>> run;
    for (int i : lin.forward) run.emplace_back(i, " fwd");
    for (int i : lin.backward) run.emplace_back(i, " bwd");
    for (const auto& [index, pass] : run) {
      const FlatEquation& e = lin.graph.eqns.at(static_cast<size_t>(index));
      if (e.prim != Prim::kDotGeneral) continue;
      Product p{e.params, {}, {}, {}, 0};
      for (ValueId v : e.inputs) p.inputs.push_back(lin.graph.values.at(static_cast<size_t>(v)).type);
      for (ValueId v : e.outputs) p.outputs.push_back(lin.graph.values.at(static_cast<size_t>(v)).type);
      if (p.inputs[0].dtype != DType::kF32) continue;
      auto same = std::find_if(products.begin(), products.end(), [&](const Product& q) {
        return q.inputs == p.inputs && q.outputs == p.outputs && q.params == p.params;
      });
      if (same == products.end()) {
        double contracted = 1;
        for (int64_t a : dot_dims(e.params, {}).lhs_contract) contracted *= static_cast<double>(p.inputs[0].shape.at(static_cast<size_t>(a)));
        p.flops = 2 * static_cast<double>(p.outputs[0].num_elements()) * contracted;
        products.push_back(p);
        same = products.end() - 1;
      }
      ++same->where[model.name + pass];
    }
  }
  return products;
}

// One product prepared on one backend, with the buffers it runs on (shared between backends).
struct PreparedProduct {
  std::unique_ptr<BackendInstance> instance;
  std::unique_ptr<PreparedKernel> kernel;
  std::unique_ptr<bench::AlignedWorkspace> workspace;
};

// Times `p` on every backend that runs it, at `threads`; returns each backend's median ms (-1 for
// a backend that declines it).
std::vector<double> time_product(const Options& o, const Product& p, int threads) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
  bench::AlignedFloats a(static_cast<size_t>(p.inputs[0].num_elements())), b(static_cast<size_t>(p.inputs[1].num_elements())),
      c(static_cast<size_t>(p.outputs[0].num_elements()));
  std::vector<PreparedProduct> prepared(o.backends.size());
  std::vector<bench::Contender> contenders;
  std::vector<size_t> contender_of;
  for (size_t i = 0; i < o.backends.size(); ++i) {
    Params options;
    options.set("num_threads", ParamValue::of_int(threads));
    prepared[i].instance = std::make_unique<BackendInstance>(default_plugins(), o.backends[i], options);
    prepared[i].kernel = prepared[i].instance->prepare(Prim::kDotGeneral, p.params, p.inputs, p.outputs, "product");
    if (!prepared[i].kernel) continue;
    prepared[i].workspace = std::make_unique<bench::AlignedWorkspace>(*prepared[i].kernel);
    PreparedProduct* run = &prepared[i];
    contenders.emplace_back(o.backends[i], [run, &a, &b, &c] {
      run->kernel->execute({a.data, b.data}, {c.data}, run->workspace->data(), run->workspace->size());
    });
    contender_of.push_back(i);
  }
  bench::RoundsOptions rounds;
  // Room for a few rounds of the largest products too (a GPT-2 head's take seconds each), guessing
  // 40 GFLOP/s a thread.
  const double guess_seconds = p.flops / (40e9 * threads) * static_cast<double>(contenders.size());
  rounds.max_seconds = std::max(o.max_seconds, 7 * guess_seconds);
  rounds.min_seconds = 0.5;
  rounds.min_samples = 7;
  rounds.min_sample_ms = 20;
  rounds.warm_up_seconds = 0.1;
  bench::run_rounds(contenders, rounds);
  std::vector<double> ms(o.backends.size(), -1);
  for (size_t j = 0; j < contenders.size(); ++j) ms[contender_of[j]] = contenders[j].interval.median;
  return ms;
}

std::string where_text(const Product& p) {
  std::string s;
  for (const auto& [where, n] : p.where) s += (s.empty() ? "" : "; ") + where + (n > 1 ? " x" + std::to_string(n) : "");
  return s;
}

void run_products(const Options& o) {
  std::cout << "| product (lhs x rhs, contracting, batch) | in | GFLOP | threads |";
  for (const std::string& b : o.backends) std::cout << " " << b << " ms |";
  std::cout << " fastest / first |\n|---|---|---|---|";
  for (size_t i = 0; i <= o.backends.size(); ++i) std::cout << "---|";
  std::cout << "\n";
  for (const Product& p : distinct_products(o)) {
    for (int threads : o.threads) {
      const std::vector<double> ms = time_product(o, p, threads);
      std::cout << "| " << p.text() << " | " << where_text(p) << " | " << fixed(p.flops / 1e9, 3) << " | " << threads << " |";
      double best = -1;
      for (double m : ms) {
        std::cout << " " << (m < 0 ? std::string("declined") : fixed(m, m < 1 ? 4 : 2)) << " |";
        if (m > 0 && (best < 0 || m < best)) best = m;
      }
      std::cout << " " << (ms[0] > 0 ? fixed(best / ms[0], 2) : std::string("-")) << " |" << std::endl;
    }
  }
}

// One model's step on one backend list, with what it reads kept alive.
struct ListStep {
  ListStep(const sweep::ModelSpec& model, const std::string& list, int threads) {
    instance = sweep::instantiate(model, "everything_saveable", 0);
    lin = linearization_of(instance);
    BackendOptions backends;
    backends.preference = split(list);
    backends.threads = threads;
    step = std::make_unique<TrainingStep>(lin, backends, instance.trained, 1e-6);
    step->set_constants(instance.constants);
    step->set_arguments(instance.arguments);
  }
  sweep::ModelInstance instance;
  Linearization lin;
  std::unique_ptr<TrainingStep> step;
};

void run_steps(const Options& o) {
  std::cout << "| model | threads |";
  for (const std::string& l : o.lists) std::cout << " " << l << " ms |";
  std::cout << "\n|---|---|";
  for (size_t i = 0; i < o.lists.size(); ++i) std::cout << "---|";
  std::cout << "\n";
  for (const sweep::ModelSpec& model : sweep_of(o).models) {
    if (!chosen(o, model.name)) continue;
    for (int threads : o.threads) {
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
      std::vector<std::unique_ptr<ListStep>> steps;
      std::vector<bench::Contender> contenders;
      for (const std::string& list : o.lists) {
        steps.push_back(std::make_unique<ListStep>(model, list, threads));
        TrainingStep* step = steps.back()->step.get();
        contenders.emplace_back(list, [step] { step->run(); });
      }
      bench::RoundsOptions rounds;
      rounds.max_seconds = o.max_seconds;
      rounds.min_seconds = 1;
      rounds.min_samples = 7;
      const bench::RoundsResult r = bench::run_rounds(contenders, rounds);
      std::cout << "| " << model.name << " | " << threads << " |";
      for (const bench::Contender& c : contenders)
        std::cout << " " << fixed(c.interval.median, c.interval.median < 10 ? 3 : 1) << " (±"
                  << fixed(100 * bench::relative_half_width(c.interval), 1) << "%) |";
      std::cout << " <!-- " << r.rounds << " rounds -->" << std::endl;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"product backends side by side: a sweep's products (--products) and whole steps (--steps)"};
  app.add_option("SWEEP", o.sweep_file, "the sweep file (default: the default sweep)");
  app.add_option("--model", o.models, "only these models (repeatable)");
  app.add_flag("--products", o.products, "time every distinct product on each of --backends");
  app.add_flag("--steps", o.steps, "time each model's step on each of --lists");
  app.add_option("--backends", o.backends, "backends for --products (default onednn blas xsmm)");
  app.add_option("--lists", o.lists, "backend lists for --steps");
  app.add_option("--threads", o.threads, "thread counts (default 1 2)");
  app.add_option("--max-seconds", o.max_seconds, "per product or step and thread count (default 8)");
  CLI11_PARSE(app, argc, argv);
  const sweep::MachineLoad load;
  if (o.products) run_products(o);
  if (o.steps) run_steps(o);
  if (const auto share = load.others_share()) std::cout << "\nothers' load: " << fixed(*share * 100, 0) << "% of the machine\n";
  return 0;
}
