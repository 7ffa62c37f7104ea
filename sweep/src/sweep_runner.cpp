#include "rematkit/sweep/sweep_runner.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <chrono>
#include <memory>
#include <new>
#include <numeric>
#include <optional>
#include <random>
#include <thread>
#include <stdexcept>

#include "rematkit/budget_solver.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/analysis/communication.hpp"
#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/analysis/flops.hpp"
#include "rematkit/analysis/gradient_difference.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/runtime/memory_limit.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "budget_rows.hpp"
#include "device_agreement.hpp"
#include "rematkit/sweep/budget_answers.hpp"
#include "rematkit/sweep/machine_load.hpp"
#include "rematkit/sweep/median_interval.hpp"
#include "rematkit/sweep/peak_rss.hpp"
#include "rematkit/sweep/sweep_models.hpp"
#include "rematkit/runtime/training_step.hpp"

namespace rematkit::sweep {
namespace {

constexpr double kLearningRate = 1e-3;  // SGD on the params; small enough that timing runs stay finite

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// A policy's model: the group's program (its inputs, drawn once planned, the same for every policy:
// the program's checkpoints are what a policy changes) linearized under the policy.
struct PolicyModel {
  Linearization lin;
};

// `traced` under `policy`: it wraps a program model that names no checkpoints of its own
// (whole_program_policy), and replaces the policies of every other model's checkpoints, as
// instantiating the model with that policy would place them.
PolicyModel linearized(const ModelProgram& traced, const std::string& policy,
                       const PluginRegistry& plugins) {
  LinearizeOptions options;
  options.policies = &plugins.policies();
  options.policy_source = "policies";
  options.differentiate = traced.trained;  // what is not trained needs no gradient
  PolicyModel pm;
  if (!traced.whole_program_policy.empty()) {
    options.policy = policy;
    pm.lin = linearize(traced.program, options);
  } else {
    pm.lin = linearize(policy == "everything_saveable" ? traced.program
                                                       : retarget_checkpoint_policies(traced.program, policy, "policies"),
                       options);
  }
  if (pm.lin.graph.mesh) place_on_mesh(pm.lin, *pm.lin.graph.mesh);  // its answers are one device's
  return pm;
}

PolicyModel solved(const SweepConfig& config, size_t model, const ModelProgram& traced,
                   const std::string& policy, const BackendOptions& backends, BudgetAnswers& answers) {
  PolicyModel pm{answers.linearized(config, model, traced.program, traced.trained, policy, backends)};
  if (pm.lin.graph.mesh) place_on_mesh(pm.lin, *pm.lin.graph.mesh);
  return pm;
}

// The policy a group's verdicts compare against: everything_saveable, or the first policy.
size_t baseline_of(const SweepConfig& config) {
  const auto it = std::find(config.policies.begin(), config.policies.end(), "everything_saveable");
  return it == config.policies.end() ? 0 : static_cast<size_t>(it - config.policies.begin());
}

// Rounds for `repetitions: auto`: enough for a 95% median interval, and a bound for a step that
// takes no measurable time.
constexpr int kAutoMinimumRounds = 6, kAutoMaximumRounds = 10000;

// One policy of a group, planned and warmed up, with the samples timed so far.
struct TimedStep {
  size_t policy = 0;
  bool wanted = false;  // its row is returned (the baseline is timed for the verdicts regardless)
  const PolicyModel* model = nullptr;
  std::unique_ptr<TrainingStep> step;  // null when its plan was refused
  double grad_diff = 0;  // the most its gradients differed from the baseline step's
  std::vector<double> ms;
  std::string refused{};  // why it was not run: its predicted peak over the memory limit
  int64_t refused_peak = 0;
};

bool narrow_enough(const std::vector<TimedStep*>& timed, double target) {
  for (const TimedStep* t : timed) {
    if (!t->step) continue;
    const MedianInterval m = median_interval(t->ms);
    if (!(m.median > 0) || (m.high - m.low) / m.median > target) return false;
  }
  return true;
}

// The largest |difference| between the gradients two steps computed last, argument by argument
// (a whole copy of every gradient would take more memory than the steps' arenas); NaN where one
// is NaN and the other is not.
double gradient_difference(const TrainingStep& a, const TrainingStep& b, size_t arguments) {
  double worst = 0;
  for (size_t i = 0; i < arguments; ++i) {
    GradientResult x, y;
    x.gradients.push_back(a.gradient(i));
    y.gradients.push_back(b.gradient(i));
    const double d = max_abs_difference(gradient_differences(x, y));
    if (std::isnan(d)) return d;
    worst = std::max(worst, d);
  }
  return worst;
}

// Each step once, all at once, a thread each: the steps must compute the gradients they compute
// alone (the warm-up compared them that way), with the others running beside them.
void run_at_once(std::vector<TimedStep>& timed) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(timed.size());
  for (size_t i = 0; i < timed.size(); ++i)
    if (timed[i].step) threads.emplace_back([&, i] {
      try {
        timed[i].step->run();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// Fills `row`'s plan and memory from its step.
void describe_communication(SweepRow& row, const Linearization& lin) {
  if (!lin.graph.mesh) return;
  const GradientCommunication c = gradient_communication(lin, *lin.graph.mesh);
  row.forward_comm_bytes = c.forward;
  row.recompute_comm_bytes = c.recompute;
  row.backward_comm_bytes = c.backward;
}

void describe(SweepRow& row, const TimedStep& t) {
  const TrainingStep& step = *t.step;
  for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost}) {
    row.predicted_peak[static_cast<size_t>(space)] = step.predicted_peak(space);
    row.measured_peak[static_cast<size_t>(space)] = step.measured_peak(space);
  }
  row.residual_bytes = residual_bytes(t.model->lin);
  auto memory = std::make_shared<MemoryReport>(build_memory_report(step.runner().program()));
  row.peak_pass = memory->peak_step >= 0 ? pass_name(memory->steps[static_cast<size_t>(memory->peak_step)].pass) : "";
  row.peak_bytes = memory->peak_bytes;
  row.memory = std::move(memory);
  const GradientFlops flops = gradient_flops(t.model->lin);
  row.forward_flops = flops.forward;
  row.recompute_flops = flops.recompute;
  row.backward_flops = flops.backward;
  row.max_grad_diff = t.grad_diff;
  describe_communication(row, t.model->lin);
}

}  // namespace

std::vector<SweepGroup> sweep_groups(const SweepConfig& config) {
  std::vector<SweepGroup> groups;
  size_t next = 1;
  for (size_t m = 0; m < config.models.size(); ++m)
    for (size_t b = 0; b < config.backends.size(); ++b)
      for (size_t t = 0; t < config.threads.size(); ++t) {
        groups.push_back(SweepGroup{m, b, t, next});
        next += config.policies.size();
      }
  return groups;
}

std::string group_name(const SweepConfig& config, const SweepGroup& group) {
  return config.models[group.model].name + " on " + joined(config.backends[group.backends]) + ", " +
         std::to_string(config.threads[group.threads]) + " thread(s)";
}

size_t grid_size(const SweepConfig& config) {
  return config.models.size() * config.backends.size() * config.threads.size() * config.policies.size();
}

// Configuration `policy` of `group`'s row, with only what names it filled in.
SweepRow named_row(const SweepConfig& config, const SweepGroup& group, size_t policy) {
  SweepRow row;
  row.config = group.first_config + policy;
  row.grid_size = grid_size(config);
  row.model = config.models[group.model].name;
  row.policy = config.policies[policy];
  row.backend = joined(config.backends[group.backends]);
  row.threads = config.threads[group.threads];
  return row;
}

// A row for each wanted configuration of a group that could not run at all, saying why.
std::vector<SweepRow> refused_group(const SweepConfig& config, const SweepGroup& group,
                                    const std::function<bool(size_t config)>& wanted, const std::string& why) {
  std::vector<SweepRow> rows;
  for (size_t p = 0; p < config.policies.size(); ++p) {
    if (!wanted(group.first_config + p)) continue;
    SweepRow row = named_row(config, group, p);
    row.failure = why;
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

// Rounds of `steps`, each once a round in an order shuffled per round (seeded, so a sweep is
// repeatable), for the repetitions, or with `repetitions: auto` until every median's interval is
// narrow enough or the time limit. False when stopped.
bool time_rounds(const SweepConfig& config, const std::vector<TimedStep*>& steps, uint64_t seed,
                 const std::function<bool()>& stopped, MeshTransport* device) {
  std::mt19937_64 shuffle(seed);
  std::vector<TimedStep*> order = steps;
  const auto started = std::chrono::steady_clock::now();
  for (int round = 0;; ++round) {
    if (config.auto_repetitions) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      bool done = round >= kAutoMaximumRounds || (round >= kAutoMinimumRounds && (narrow_enough(order, config.target_interval) ||
                                                                                 elapsed >= config.time_limit_seconds));
      if (device) done = device_0s(*device, done, "timed enough");  // every device runs as many rounds
      if (done) return true;
    } else if (round >= config.repetitions) {
      return true;
    }
    std::shuffle(order.begin(), order.end(), shuffle);
    for (TimedStep* t : order) {
      if (!t->step) continue;
      const auto start = std::chrono::steady_clock::now();
      t->step->run();
      t->ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (stopped()) return false;
    }
  }
}

// `t`'s row: its times against the baseline's interval, its plan and memory; or why it did not run.
SweepRow finished_row(const SweepConfig& config, const SweepGroup& group, const TimedStep& t,
                      const std::optional<MedianInterval>& base, double machine_load, int64_t process_peak_rss) {
  SweepRow row = named_row(config, group, t.policy);
  if (!t.step) {
    row.failure = t.refused;
    row.predicted_peak[static_cast<size_t>(MemorySpace::kDevice)] = t.refused_peak;
    row.residual_bytes = residual_bytes(t.model->lin);
    const GradientFlops flops = gradient_flops(t.model->lin);
    row.forward_flops = flops.forward;
    row.recompute_flops = flops.recompute;
    row.backward_flops = flops.backward;
    describe_communication(row, t.model->lin);
    return row;
  }
  const MedianInterval m = median_interval(t.ms);
  row.median_ms = m.median;
  row.median_low_ms = m.low;
  row.median_high_ms = m.high;
  row.min_ms = *std::min_element(t.ms.begin(), t.ms.end());
  row.max_ms = *std::max_element(t.ms.begin(), t.ms.end());
  row.samples_ms = t.ms;
  row.versus_baseline = t.policy == baseline_of(config) || !base ? "" : versus(m, *base);
  row.machine_load = machine_load;
  row.process_peak_rss = process_peak_rss;
  describe(row, t);
  return row;
}

// A policy's step: every device's in this process, or with `device`, that device's alone.
std::unique_ptr<TrainingStep> training_step(const Linearization& lin, const BackendOptions& options,
                                            const std::vector<size_t>& trained, MeshTransport* device) {
  if (!device) return std::make_unique<TrainingStep>(lin, options, trained, kLearningRate);
  return std::make_unique<TrainingStep>(lin, options, trained, kLearningRate, *device);
}

// A row as the worst device's: the highest peaks, the largest gradient difference.
void worst_of_devices(SweepRow& row, MeshTransport& device) {
  for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost}) {
    const auto s = static_cast<size_t>(space);
    row.predicted_peak[s] = most_of_devices(device, row.predicted_peak[s], "predicted peak");
    row.measured_peak[s] = most_of_devices(device, row.measured_peak[s], "measured peak");
  }
  row.max_grad_diff = most_of_devices(device, row.max_grad_diff, "gradient difference");
}

// The reference gradients of a group whose steps run one after another, kept once their step is
// gone: each argument's in float where float holds every element exactly (f32 and bf16 params),
// else in double.
class KeptGradients {
 public:
  KeptGradients(const TrainingStep& step, size_t arguments) {
    for (size_t i = 0; i < arguments; ++i) {
      std::optional<Tensor> g = step.gradient(i);
      Kept& k = kept_.emplace_back();
      if (!g) continue;
      k.type = g->type;
      k.present = true;
      const bool exact = std::all_of(g->data.begin(), g->data.end(), [](double v) {
        return std::isnan(v) || static_cast<double>(static_cast<float>(v)) == v;
      });
      if (exact) k.narrow.assign(g->data.begin(), g->data.end());
      else k.wide = std::move(g->data);
    }
  }
  // As gradient_difference, against `step`'s last gradients.
  double max_difference(const TrainingStep& step) const {
    double worst = 0;
    for (size_t i = 0; i < kept_.size(); ++i) {
      const Kept& k = kept_[i];
      GradientResult x, y;
      x.gradients.push_back(step.gradient(i));
      if (k.present)
        y.gradients.push_back(Tensor{k.type, k.wide.empty() ? std::vector<double>(k.narrow.begin(), k.narrow.end()) : k.wide});
      else
        y.gradients.emplace_back();
      const double d = max_abs_difference(gradient_differences(x, y));
      if (std::isnan(d)) return d;
      worst = std::max(worst, d);
    }
    return worst;
  }

 private:
  struct Kept {
    Type type;
    bool present = false;
    std::vector<float> narrow;
    std::vector<double> wide;
  };
  std::vector<Kept> kept_;
};

// A group whose steps do not fit the memory limit together: each step planned, loaded, checked
// against the first one's gradients (the baseline's where it runs) and timed alone, then let go
// before the next. Its rows say so (timed_alone); there is no all-at-once check.
std::vector<SweepRow> one_after_another(const SweepConfig& config, const SweepGroup& group, std::vector<TimedStep>& timed,
                                        ModelInstance& instance, const BackendOptions& options,
                                        const std::function<bool()>& stopped, MeshTransport* device) {
  const PeakRss rss;
  const size_t baseline = baseline_of(config);
  std::vector<size_t> order(timed.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return timed[i].policy == baseline; });
  std::optional<KeptGradients> reference;
  std::optional<MedianInterval> base;
  std::vector<std::optional<SweepRow>> rows(timed.size());
  for (size_t i : order) {
    TimedStep& t = timed[i];
    try {
      t.step = training_step(t.model->lin, options, instance.trained, device);
    } catch (const MemoryLimitError& e) {
      t.refused = e.what();
      t.refused_peak = e.needed();
    }
    if (t.step) {
      t.step->set_constants(instance.constants);
      t.step->set_arguments(instance.arguments);
      t.step->run();  // warm-up; its gradients are those of the initial params, as the first step's
      if (reference) t.grad_diff = reference->max_difference(*t.step);
      else reference.emplace(*t.step, instance.arguments.size());
      const MachineLoad load;
      if (stopped() || !time_rounds(config, {&t}, config.seed * 0x9E3779B97F4A7C15ull + group.first_config + i, stopped, device))
        return {};
      if (t.policy == baseline) base = median_interval(t.ms);
      rows[i] = finished_row(config, group, t, base, load.others_share().value_or(0), rss.bytes().value_or(0));
      t.step.reset();
    } else {
      rows[i] = finished_row(config, group, t, base, 0, 0);
    }
    rows[i]->timed_alone = true;
  }
  std::vector<SweepRow> wanted_rows;
  for (size_t i = 0; i < timed.size(); ++i)
    if (timed[i].wanted) wanted_rows.push_back(std::move(*rows[i]));
  return wanted_rows;
}

}  // namespace

std::vector<SweepRow> timed_group(const SweepConfig& config, const PluginRegistry& plugins, const SweepGroup& group,
                                  const std::function<bool(size_t config)>& wanted, const std::atomic<bool>* stop,
                                  BudgetAnswers& answers, MeshTransport* device) {
  const PeakRss rss;
  const ModelSpec& model = config.models[group.model];
  BackendOptions options = backend_options_of(config, group.backends, plugins);
  options.threads = config.threads[group.threads];
  options.max_memory = config.max_memory;
  const size_t baseline = baseline_of(config);
  const std::function<bool()> stopped = [&] { return stop && stop->load(std::memory_order_relaxed); };

  // Plan what is timed: the wanted policies and the baseline. `models` never reallocates, since
  // the timed steps point into it. The model's inputs are drawn once, for every policy, and only
  // once a step is planned that fits: a model too large for the machine is refused in the time
  // its plans take, not the time its values would.
  std::vector<TimedStep> timed;
  std::vector<PolicyModel> models;
  models.reserve(config.policies.size());
  // The model under everything_saveable: its program and trained arguments.
  const ModelProgram traced = model_program(model, "everything_saveable");
  const auto drawn_instance = [&] { return instantiate(model, "everything_saveable", config.seed, config.max_memory); };
  for (size_t p = 0; p < config.policies.size(); ++p) {
    const bool wanted_here = wanted(group.first_config + p);
    if (!wanted_here && p != baseline) continue;
    const std::string& policy = config.policies[p];
    models.push_back(budget_policy(policy) ? solved(config, group.model, traced, policy, options, answers)
                                           : linearized(traced, policy, plugins));
    timed.push_back(TimedStep{p, wanted_here, &models.back(), nullptr, 0, {}});
  }
  if (std::none_of(timed.begin(), timed.end(), [](const TimedStep& t) { return t.wanted; })) return {};
  if (device && (!models[0].lin.graph.mesh || models[0].lin.graph.mesh->num_devices() != device->mesh().num_devices()))
    internal_error(group_name(config, group) + ": run as one device of a mesh, but its model is not on that mesh");

  // Each policy's step, planned and allocated, its inputs loaded into its arena; one whose
  // predicted peak is over the memory limit is refused before it allocates, and its row says so.
  // A step that fits the limit alone but not beside the steps before it sends the group one step
  // after another.
  int64_t limit = options.max_memory.value_or(available_memory_bytes());
  if (device) limit = least_of_devices(*device, limit, "memory limit");  // so every device plans alike
  int64_t allocated = 0;
  for (TimedStep& t : timed) {
    BackendOptions beside = options;
    beside.max_memory = limit - allocated;
    try {
      t.step = training_step(t.model->lin, beside, traced.trained, device);
    } catch (const MemoryLimitError& e) {
      if (e.needed() <= limit) {
        for (TimedStep& other : timed) other.step.reset();
        ModelInstance instance = drawn_instance();
        BackendOptions agreed = options;
        agreed.max_memory = limit;
        std::vector<SweepRow> rows = one_after_another(config, group, timed, instance, agreed, stopped, device);
        if (device)
          for (SweepRow& row : rows) worst_of_devices(row, *device);
        return rows;
      }
      // Over the limit alone: refused, in the words of the whole limit.
      try {
        check_memory_limit(e.needed(), limit, "the step's predicted peak");
      } catch (const MemoryLimitError& alone) {
        t.refused = alone.what();
      }
      t.refused_peak = e.needed();
      continue;
    }
    // On a mesh, this process holds every device's arena.
    allocated += t.step->devices() * (t.step->predicted_peak(MemorySpace::kDevice) + t.step->predicted_peak(MemorySpace::kPinnedHost));
    if (stopped()) return {};
  }
  // The inputs into every arena an argument at a time, each let go once all have it: the process
  // holds the doubles of the arguments still to load and the arenas' pages filled so far. None
  // are drawn when every step was refused.
  const size_t arguments = traced.program.invars.size();
  if (std::any_of(timed.begin(), timed.end(), [](const TimedStep& t) { return t.step != nullptr; })) {
    ModelInstance instance = drawn_instance();
    for (TimedStep& t : timed)
      if (t.step) t.step->set_constants(instance.constants);
    for (size_t a = 0; a < arguments; ++a) {
      for (TimedStep& t : timed)
        if (t.step) t.step->set_argument(a, instance.arguments[a]);
      std::vector<double>().swap(instance.arguments[a].data);
    }
  }

  // The gradients every policy must agree on, bit for bit: the baseline step's (or, where it was
  // refused, the first step's that runs). Compared twice: each step's warm-up run alone, then
  // every step run at once, a thread each.
  const auto reference = std::find_if(timed.begin(), timed.end(), [&](const TimedStep& t) { return t.step && t.policy == baseline; });
  const auto first_run = std::find_if(timed.begin(), timed.end(), [](const TimedStep& t) { return t.step != nullptr; });
  const TimedStep* base_step = reference != timed.end() ? &*reference : first_run != timed.end() ? &*first_run : nullptr;
  for (TimedStep& t : timed) {
    if (!t.step) continue;
    t.step->run();  // warm-up; its gradients are those of the initial params, as the baseline's
    if (stopped()) return {};
  }
  for (TimedStep& t : timed)
    if (t.step && &t != base_step) t.grad_diff = gradient_difference(*t.step, *base_step->step, arguments);
  if (base_step && !device) {  // (a device's steps at once would interleave their collectives)
    run_at_once(timed);
    for (TimedStep& t : timed)
      if (t.step && &t != base_step) {
        const double d = gradient_difference(*t.step, *base_step->step, arguments);
        if (std::isnan(d) || d > t.grad_diff) t.grad_diff = d;
      }
  }

  const MachineLoad load;
  std::vector<TimedStep*> all;
  for (TimedStep& t : timed) all.push_back(&t);
  if (!time_rounds(config, all, config.seed * 0x9E3779B97F4A7C15ull + group.first_config, stopped, device)) return {};
  const double machine_load = load.others_share().value_or(0);  // unknown: not marked busy

  std::optional<MedianInterval> base;
  for (const TimedStep& t : timed)
    if (t.policy == baseline && t.step) base = median_interval(t.ms);
  std::vector<SweepRow> rows;
  for (const TimedStep& t : timed)
    if (t.wanted) rows.push_back(finished_row(config, group, t, base, machine_load, t.step ? rss.bytes().value_or(0) : 0));
  if (device)
    for (SweepRow& row : rows) worst_of_devices(row, *device);
  return rows;
}

std::vector<SweepRow> run_group(const SweepConfig& config, const PluginRegistry& plugins, const SweepGroup& group,
                                const std::function<bool(size_t config)>& wanted, const std::atomic<bool>* stop,
                                BudgetAnswers* answers, MeshTransport* device) {
  BudgetAnswers own;
  // A group over the limit as a whole (its model's inputs, say) fails alone, and the sweep goes on.
  try {
    return timed_group(config, plugins, group, wanted, stop, answers ? *answers : own, device);
  } catch (const MemoryLimitError& e) {
    return refused_group(config, group, wanted, e.what());
  } catch (const std::bad_alloc&) {
    return refused_group(config, group, wanted, "out of memory while planning or running this group");
  }
}

Shard parse_shard(const std::string& text) {
  Shard shard;
  size_t used = 0;
  const size_t slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    shard.index = std::stoul(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    shard.count = std::stoul(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw std::invalid_argument("count");
  } catch (const std::logic_error&) {
    fail("--shard: '" + text + "' is not I/N (for example 2/8)");
  }
  if (shard.count < 1 || shard.index < 1 || shard.index > shard.count)
    fail("--shard: '" + text + "' needs 1 <= I <= N");
  return shard;
}

SweepResult run_sweep(const SweepConfig& config, const PluginRegistry& plugins, const SweepRunOptions& options) {
  const Shard shard = options.shard;
  size_t total = 0;
  for (size_t c = 1; c <= grid_size(config); ++c) total += shard.has(c);
  SweepResult result;
  BudgetAnswers answers;  // a model's budget rows, solved once per backend list
  for (const SweepGroup& group : sweep_groups(config)) {
    const ModelSpec& model = config.models[group.model];
    bool any = false;
    for (size_t p = 0; p < config.policies.size(); ++p) any = any || shard.has(group.first_config + p);
    if (!any) continue;
    if (options.progress) options.progress(result.rows.size(), total, group_name(config, group));
    try {
      std::vector<SweepRow> rows =
          run_group(config, plugins, group, [&](size_t c) { return shard.has(c); }, options.stop, &answers);
      if (rows.empty()) {
        result.interrupted = true;
        return result;
      }
      for (SweepRow& row : rows) result.rows.push_back(std::move(row));
    } catch (const Error& e) {
      const std::string message = e.what();
      if (message.rfind(config.source + ":", 0) == 0) throw;  // already placed in the sweep file
      throw Error(e.kind(), config.source + ": model '" + model.name + "': " + message);
    }
  }
  return result;
}

}  // namespace rematkit::sweep
