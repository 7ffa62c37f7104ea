// The budget solver's search: structure first, the integer program second, every answer judged by
// the planner, all within one deadline.
//  1. JAX's fixed policies are planned: the ends of a fraction's range, and real answers.
//  2. The candidates split into segments (segments.hpp). Alike layers under one checkpoint are
//     solved by dynamic programming over runs of layers (chain_dp.hpp); a sequence of segments
//     (per-layer checkpoints, scan bodies) by dynamic programming over segments (segment_dp.hpp),
//     each segment's options from exhaustive search or from the integer program on that segment
//     alone.
//  3. One general segment is solved by the integer program (integer_program.hpp,
//     remat_formulation.hpp), started from the best structured or fixed answer; a larger program is
//     improved by it where it is small enough and time is left.
// An answer the planner finds over budget recalibrates the model and the search goes on. Without
// CBC, or when time runs out first, a greedy search improves the best answer found, and the output
// says what was proven.
#include "rematkit/budget_solver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "chain_dp.hpp"
#include "deadline.hpp"
#include "integer_program.hpp"
#include "kernel_timing.hpp"
#include "planner_judge.hpp"
#include "rematkit/ir/byte_size.hpp"
#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/analysis/communication.hpp"
#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"
#include "remat_formulation.hpp"
#include "segment_dp.hpp"

namespace rematkit {
namespace {

using solver::Answer;
using solver::Candidate;
using solver::DecisionTable;
using solver::IntegerProgram;
using solver::kept_anywhere;
using solver::MemoryModel;
using solver::PlannerJudge;
using solver::Segment;
using solver::SegmentOption;
using solver::Verdict;
using Clock = std::chrono::steady_clock;

bool has_checkpoint(const Program& program) {
  for (const Equation& eqn : program.eqns) {
    if (eqn.prim == Prim::kCheckpoint) return true;
    for (const Program* sub : sub_programs(eqn.params))
      if (has_checkpoint(*sub)) return true;
  }
  return false;
}

DecisionTable table_of(const std::vector<Candidate>& candidates, const Answer& a) {
  DecisionTable t;
  t.otherwise = Decision::kSaveable;
  for (size_t i = 0; i < candidates.size(); ++i)
    t.by_site[candidates[i].site] =
        a.offloaded[i] ? Decision::kOffloadable : a.saved[i] ? Decision::kSaveable : Decision::kRecompute;
  return t;
}

// The decision each site got in `lin`: its checkpoints' answers, a scan body's inside it, and, for a
// scan inside a checkpoint, recompute for what its backward pass computes again.
void decisions_by_site(const Linearization& lin, std::map<std::string, Decision>& out) {
  const FlatGraph& g = lin.graph;
  const std::vector<std::string> sites = equation_sites(g);
  for (size_t e = 0; e < g.eqns.size(); ++e)
    if (!sites[e].empty() && g.eqns[e].region > 0) out[sites[e]] = lin.decisions[e].decision;
  for (const FlatEquation& eqn : g.eqns) {
    if (!eqn.scan || eqn.part != ControlFlowPart::kForward) continue;
    const ScanLinearization& s = *eqn.scan;
    decisions_by_site(s.body, out);
    if (eqn.region == 0) continue;
    const std::vector<std::string> body_sites = equation_sites(s.body.graph);
    for (int e : s.body.forward)
      if (!body_sites[static_cast<size_t>(e)].empty() && s.body.graph.eqns[static_cast<size_t>(e)].region == 0)
        out.try_emplace(body_sites[static_cast<size_t>(e)], Decision::kSaveable);
    for (int e : s.recompute_eqns)
      if (!body_sites[static_cast<size_t>(e)].empty()) out[body_sites[static_cast<size_t>(e)]] = Decision::kRecompute;
  }
}

// What moving a byte to pinned host memory and back costs, in cost units: a FLOP, or with measured
// costs a nanosecond.
constexpr double kOffloadCostPerByte = 1.0;

// A segment of this many candidates or fewer (that the backward pass may need) has every answer
// tried: 2^10 option profiles.
constexpr size_t kEveryAnswer = 10;
// A segment of this many or fewer gets options from the integer program on it too.
constexpr size_t kProgramOptions = 64;

std::string plural(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

class Search {
 public:
  Search(const Program& program, const BudgetOptions& options)
      : options_(options),
        plugins_(options.plugins ? *options.plugins : default_plugins()),
        whole_program_(!has_checkpoint(program)),
        judge_(program, whole_program_, plugins_.policies(), backend_options(), options.differentiate, options.mesh,
               options.comm_flops_per_byte),
        // A little of the limit is kept for what follows the search (the answer's linearization).
        deadline_(options.time_limit_seconds * 0.97) {}

  // What every budget shares: the fixed policies planned, the model, the structure and its options.
  void prepare() {
    // Everything saved: the top of the range, and the equations to decide.
    everything_ = judged(DecisionTable{});
    candidates_ = solver::find_candidates(*everything_.lin, timeline_, options_.comm_flops_per_byte);
    if (options_.cost == RecomputeCost::kMeasured) measure_costs();
    model_.emplace(candidates_, timeline_);
    const Answer everything = uniform_for(true), nothing = uniform_for(false);
    model_->calibrate(everything_, everything.saved);
    remember(everything, everything_);
    origin_ = "JAX's nothing_saveable";
    const Verdict none = judged(table_of(candidates_, nothing));
    model_->calibrate(none, nothing.saved);
    remember(nothing, none);
    seed_with_jax_policies();
    segments_ = solver::find_segments(candidates_, static_cast<int>(timeline_.moments.size()));
    origin_ = "the structured search";
    prepare_structure();
    // A fraction's 0: the smallest planned peak of the fixed policies and of the structured answer
    // found without a time limit in play (or, for one general segment, of the knapsack order's
    // grid), so that a fraction means the same bytes at any limit.
    least_ = structured_answer(std::nullopt);
    if (least_) judge_answer(*least_);
    if (general_segment()) knapsack_grid();
    fraction_zero_ = smallest_;
    if (everything_.arena_peak > fraction_zero_) add_program_options();
  }

  // One budget's answer: the search for it, then the cheapest planned within it.
  BudgetSolution answer(const Budget& wanted) {
    Searched s = search(wanted);
    s.index = cheapest_within(s.solution.budget_bytes, s.index, s.solution);
    return finish(s.index, s.solution);
  }

  // Several budgets' answers. Each is the cheapest of every answer planned for any of them that
  // fits its budget, picked after all the searches: then a larger budget never costs more and a
  // smaller one never plans a larger peak, whatever each search found in its share of the time.
  // (If the answer at the larger budget fits the smaller, it is the cheapest there too.)
  std::vector<BudgetSolution> answers(const std::vector<Budget>& wanted) {
    std::vector<Searched> searched;
    for (const Budget& b : wanted) searched.push_back(search(b));
    std::vector<BudgetSolution> out;
    for (Searched& s : searched) {
      s.index = cheapest_within(s.solution.budget_bytes, s.index, s.solution);
      out.push_back(finish(s.index, s.solution));
    }
    return out;
  }

 private:
  struct Searched {
    size_t index;  // into judged_
    BudgetSolution solution;  // the method and what it proved; finish() adds the rest
  };

  Searched search(const Budget& wanted) {
    BudgetSolution solution;
    std::optional<size_t> found;
    int64_t budget = wanted.smallest ? smallest_ : budget_bytes(wanted);
    if (!wanted.smallest && budget >= everything_.arena_peak) {
      found = 0;  // everything saved fits: nothing to recompute
      solution.method = "everything_saveable fits the budget";
      solution.proven_optimal = solution.bound_known = true;
    } else {
      if (wanted.smallest || budget < smallest_) probe_smallest();
      if (wanted.smallest) budget = smallest_;
      if (budget < smallest_)
        fail("the budget " + wanted.text + " (" + std::to_string(budget) + " bytes) is below the smallest feasible peak, " +
             std::to_string(smallest_) + " bytes (" + human_bytes(smallest_) + ")");
      found = structured_within(budget, solution);
      // The integer program on the whole program: the method for one general segment.
      if (!found && IntegerProgram::available() && !deadline_.passed()) {
        if (integer_program_fits()) {
          if (general_segment()) seed_on_planner(budget), found = free_answer(budget, solution);
          if (!found) found = exact(budget, solution, deadline_.left());
          if (found && general_segment()) improve_on_planner(budget, *found, solution);
        }
        else
          exact_gave_up_ = "no structured answer planned within the budget, and the whole program is too large for the integer program";
      }
      if (!found) found = greedy(budget, wanted, solution);
    }
    solution.budget_bytes = budget;
    return {*found, std::move(solution)};
  }

  // Every answer judged within budget is a candidate; the planner's count of recomputed FLOPs
  // settles it (JAX's fixed policies among them, so none of those is both smaller and cheaper).
  // Ties go to the smaller peak (equations of no FLOPs, data movement, are free to recompute).
  size_t cheapest_within(int64_t budget, size_t found, BudgetSolution& solution) const {
    const size_t method_found = found;
    for (size_t j = 0; j < judged_.size(); ++j) {
      const Judged& a = judged_[j];
      const Judged& b = judged_[found];
      const double cost_a = ranked_cost(a), cost_b = ranked_cost(b);
      if (fits(j, budget) && (cost_a < cost_b || (cost_a == cost_b && a.peak < b.peak))) found = j;
    }
    if (found != method_found && judged_[found].origin != judged_[method_found].origin)
      solution.method += "; the answer is from " + judged_[found].origin + ", planned within the budget at less cost";
    return found;
  }

  // Whether judged answer j may be the answer: planned within the budget, and, for a JAX export,
  // one decision per signature (the planner-side searches need not keep to it).
  bool fits(size_t j, int64_t budget) const {
    return judged_[j].peak <= budget && (!options_.jax_signatures || agrees_by_signature(judged_[j].answer));
  }

  struct Judged {
    Answer answer;
    int64_t peak;
    double recompute_flops;
    int64_t residual_bytes;
    double cost;
    std::string origin;  // which search found it, for the method line
  };

  BackendOptions backend_options() const {
    BackendOptions b;
    b.plugins = &plugins_;
    b.preference = options_.backends.empty() ? plugins_.fastest_backends() : options_.backends;
    b.threads = options_.threads;
    return b;
  }

  Answer uniform_for(bool saved) const {
    return {std::vector<char>(candidates_.size(), saved ? 1 : 0), std::vector<char>(candidates_.size(), 0)};
  }

  // A planner call, timed: the search stops asking for one when less than the longest so far is left.
  Verdict judged(const DecisionTable& table) {
    const auto start = Clock::now();
    Verdict v = judge_.judge(table);
    judge_seconds_ = std::max(judge_seconds_, std::chrono::duration<double>(Clock::now() - start).count());
    return v;
  }
  bool time_for_a_judgment(double also = 0.0) const { return deadline_.left() > 1.2 * judge_seconds_ + also; }

  int64_t budget_bytes(const Budget& b) const {
    if (!b.is_fraction) return static_cast<int64_t>(std::floor(b.value));
    const double range = static_cast<double>(everything_.arena_peak - fraction_zero_);
    return fraction_zero_ + static_cast<int64_t>(std::floor(b.value * std::max(0.0, range)));
  }

  void measure_costs() {
    measured_ns_.assign(candidates_.size(), 1.0);
    std::map<int, std::vector<size_t>> by_level;
    for (size_t i = 0; i < candidates_.size(); ++i) by_level[candidates_[i].level].push_back(i);
    for (const auto& [level, members] : by_level) {
      std::vector<int> eqns;
      for (size_t i : members) eqns.push_back(candidates_[i].eqn);
      const std::vector<double> ns =
          solver::time_kernels(timeline_.levels[static_cast<size_t>(level)].lin->graph, eqns, backend_options());
      const Linearization& at = *timeline_.levels[static_cast<size_t>(level)].lin;
      for (size_t k = 0; k < members.size(); ++k) {
        double cost = ns[k];
        if (options_.comm_ns_per_byte > 0 && at.graph.mesh)  // what recomputing a collective sends again
          cost += options_.comm_ns_per_byte *
                  static_cast<double>(collective_bytes(at.graph, at.graph.eqns[static_cast<size_t>(eqns[k])], *at.graph.mesh));
        measured_ns_[members[k]] = cost * static_cast<double>(timeline_.levels[static_cast<size_t>(level)].iterations);
      }
    }
  }

  // The model's recomputation cost of an answer.
  double model_cost(const Answer& a) const {
    const solver::Effects fx = solver::effects_of(candidates_, kept_anywhere(a));
    double cost = 0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (fx.recomputed[i]) cost += unit_cost(i);
      if (fx.needed[i] && a.offloaded[i]) cost += kOffloadCostPerByte * static_cast<double>(candidates_[i].bytes);
    }
    return cost;
  }
  double unit_cost(size_t i) const {
    return options_.cost == RecomputeCost::kMeasured ? measured_ns_[i] : candidates_[i].flops;
  }
  std::vector<double> unit_costs() const {
    std::vector<double> c;
    for (size_t i = 0; i < candidates_.size(); ++i) c.push_back(unit_cost(i));
    return c;
  }

  size_t remember(const Answer& a, const Verdict& v) {
    judged_.push_back({a, v.arena_peak, v.recompute_flops, v.residual_bytes, model_cost(a), origin_});
    smallest_ = std::min(smallest_, v.arena_peak);
    return judged_.size() - 1;
  }
  std::optional<size_t> find_judged(const Answer& a) const {
    for (size_t j = 0; j < judged_.size(); ++j)
      if (judged_[j].answer.saved == a.saved && judged_[j].answer.offloaded == a.offloaded) return j;
    return std::nullopt;
  }
  // `a` judged (once), the model calibrated on it.
  size_t judge_answer(const Answer& a) {
    if (const std::optional<size_t> seen = find_judged(a)) return *seen;
    const Verdict v = judged(table_of(candidates_, a));
    model_->calibrate(v, kept_anywhere(a));
    return remember(a, v);
  }
  // The same, the model left as it is.
  size_t judge_only(const Answer& a) {
    if (const std::optional<size_t> seen = find_judged(a)) return *seen;
    return remember(a, judged(table_of(candidates_, a)));
  }

  solver::RematFormulation formulation(solver::FormulationOptions f = {}) const {
    f.cost = unit_costs();
    f.offload = options_.allow_offload;
    f.offload_cost_per_byte = kOffloadCostPerByte;
    f.one_answer_per_signature = options_.jax_signatures;
    return solver::RematFormulation(candidates_, *model_, std::move(f));
  }
  double cost_scale() const {
    double most = 1.0;
    for (size_t i = 0; i < candidates_.size(); ++i) most = std::max(most, unit_cost(i));
    return most;
  }

  // A policy's decisions as a per-equation answer.
  Answer answer_of_policy(const std::string& spec) const {
    std::map<std::string, Decision> by_site;
    decisions_by_site(judge_.linearize_as(spec), by_site);
    Answer a = uniform_for(true);
    for (size_t i = 0; i < candidates_.size(); ++i)
      if (const auto it = by_site.find(candidates_[i].site); it != by_site.end())
        a.saved[i] = it->second != Decision::kRecompute;
    return a;
  }

  // JAX's fixed policies, as per-equation answers: real points the search starts from.
  void seed_with_jax_policies() {
    for (const char* spec : {"dots_saveable", "dots_with_no_batch_dims_saveable"}) {
      if (!plugins_.policies().contains(spec)) continue;
      const Answer a = answer_of_policy(spec);
      seeds_.push_back(a);
      if (options_.jax_signatures && !agrees_by_signature(a)) continue;
      origin_ = std::string("JAX's ") + spec;
      judge_answer(a);
    }
  }

  bool agrees_by_signature(const Answer& a) const {
    std::map<std::string, char> seen;
    for (size_t i = 0; i < candidates_.size(); ++i)
      if (seen.try_emplace(candidates_[i].signature, a.saved[i]).first->second != a.saved[i]) return false;
    return true;
  }

  // --- Structure --------------------------------------------------------------------------------

  // Alike layers under one checkpoint, or the options of every segment. (A JAX export needs one
  // answer per signature across the program, which the integer program alone keeps.)
  void prepare_structure() {
    if (options_.jax_signatures || options_.allow_offload || !options_.structure) return;
    if (segments_.size() == 1 || (segments_.size() == 2 && segments_[1].last_moment < 0)) {
      chain_ = solver::find_chain(candidates_, segments_[0]);
      if (chain_) {
        chain_options_ = chain_options();
        return;
      }
      // One general segment: the integer program's, unless it is small enough to try every answer.
      size_t free = 0;
      for (int m : segments_[0].members) free += candidates_[static_cast<size_t>(m)].earliest >= 0;
      if (free > kEveryAnswer) return;
    }
    if (!segments_.empty()) segment_options();
  }

  solver::ChainOptions chain_options() const {
    solver::ChainOptions o;
    o.unit_cost = unit_costs();
    o.deadline = deadline_.end();
    // The seeds' layer patterns, from a layer in the middle of the chain.
    const std::vector<int>& layer = chain_->layers[chain_->layers.size() / 2];
    for (const Answer& seed : seeds_) {
      std::vector<char> p;
      for (int m : layer) p.push_back(seed.saved[static_cast<size_t>(m)]);
      o.patterns.push_back(std::move(p));
    }
    return o;
  }

  // Per segment, the answers the dynamic program chooses among: the uniform ones and the seeds',
  // and every answer (a segment of few candidates), or a chain's run answers at a few budgets; for
  // other segments, add_program_options() adds the integer program's. Alike segments share them.
  void segment_options() {
    exhaustive_ = true;
    for (const Segment& s : segments_) {
      if (answers_by_shape_.count(s.shape)) continue;
      std::vector<std::vector<char>>& answers = answers_by_shape_[s.shape];
      answers.push_back(std::vector<char>(s.members.size(), 1));
      answers.push_back(std::vector<char>(s.members.size(), 0));
      for (const Answer& seed : seeds_) {
        std::vector<char> p;
        for (int m : s.members) p.push_back(seed.saved[static_cast<size_t>(m)]);
        answers.push_back(std::move(p));
      }
      std::vector<size_t> free;  // members whose answer can matter
      for (size_t k = 0; k < s.members.size(); ++k)
        if (candidates_[static_cast<size_t>(s.members[k])].earliest >= 0) free.push_back(k);
      if (free.size() <= kEveryAnswer) {
        for (uint32_t bits = 0; bits < (1u << free.size()); ++bits) {
          std::vector<char> p(s.members.size(), 1);
          for (size_t f = 0; f < free.size(); ++f) p[free[f]] = (bits >> f) & 1;
          answers.push_back(std::move(p));
        }
        continue;
      }
      exhaustive_ = false;
      if (std::optional<solver::Chain> chain = solver::find_chain(candidates_, s)) chain_segment_answers(s, *chain, answers);
      else {
        descent_answers(s, answers);
        // The integer program refines a segment it can solve in a fraction of a second; a larger
        // one (a transformer block) keeps the descent's options, found the same at any limit.
        if (free.size() <= kProgramOptions) needs_program_.push_back(s.shape);
      }
    }
    make_segment_options();
  }

  void make_segment_options() {
    const std::vector<double> costs = unit_costs();
    options_by_segment_.clear();
    for (const Segment& s : segments_) {
      std::vector<SegmentOption> options;
      for (const std::vector<char>& saved : answers_by_shape_[s.shape]) options.push_back(solver::option_of(candidates_, s, saved, costs));
      solver::keep_undominated(options);
      options_by_segment_.push_back(std::move(options));
    }
  }

  // The integer program's answers for the segments whose options need it, within a share of the time.
  void add_program_options() {
    if (needs_program_.empty() || !IntegerProgram::available()) return;
    // A sixth of the time: the descent's options usually carry the answer; the program's refine it.
    const double share = deadline_.left() / 6 / static_cast<double>(needs_program_.size());
    for (int shape : needs_program_)
      for (const Segment& s : segments_)
        if (s.shape == shape) {
          segment_program_answers(s, share, answers_by_shape_[shape]);
          break;
        }
    make_segment_options();
  }

  // The range of a segment's peak alone: everything saved, and the least the model allows.
  std::pair<int64_t, int64_t> local_range(const Segment& s, const std::vector<SegmentOption>& uniform) const {
    int64_t lo = INT64_MAX, hi = 0;
    for (const SegmentOption& o : uniform) {
      const int64_t p = solver::option_peak(*model_, s, o);
      lo = std::min(lo, p), hi = std::max(hi, p);
    }
    return {lo, hi};
  }

  // A chain inside one segment: its run answers at a few budgets.
  void chain_segment_answers(const Segment& s, const solver::Chain& chain, std::vector<std::vector<char>>& answers) {
    solver::ChainOptions o;
    o.unit_cost = unit_costs();
    o.deadline = deadline_.end();
    const std::optional<solver::ChainAnswer> least = solver::solve_chain(candidates_, *model_, s, chain, o, std::nullopt);
    if (!least) return;
    answers.push_back(least->saved);
    const SegmentOption all = solver::option_of(candidates_, s, std::vector<char>(s.members.size(), 1), o.unit_cost);
    const int64_t hi = solver::option_peak(*model_, s, all);
    for (int k = 1; k <= 6; ++k) {
      const int64_t limit = least->peak + (hi - least->peak) * k / 7;
      if (std::optional<solver::ChainAnswer> a = solver::solve_chain(candidates_, *model_, s, chain, o, limit))
        answers.push_back(a->saved);
    }
  }

  // A path from everything saved to nothing saved, one decision at a time: each step recomputes the
  // value whose recomputation lowers the segment's peak most for what it costs. Its answers trade
  // the segment's bytes for recomputation; the integer program may add better ones.
  void descent_answers(const Segment& s, std::vector<std::vector<char>>& answers) const {
    const std::vector<double> costs = unit_costs();
    std::vector<char> saved(s.members.size(), 1);
    SegmentOption current = solver::option_of(candidates_, s, saved, costs);
    int64_t peak = solver::option_peak(*model_, s, current);
    for (size_t step = 0; step < s.members.size() && !deadline_.passed(); ++step) {
      size_t best = s.members.size();
      double best_score = 0;
      int64_t best_peak = 0;
      for (size_t k = 0; k < s.members.size(); ++k) {
        if (!saved[k] || candidates_[static_cast<size_t>(s.members[k])].earliest < 0) continue;
        saved[k] = 0;
        const SegmentOption trial = solver::option_of(candidates_, s, saved, costs);
        saved[k] = 1;
        const int64_t p = solver::option_peak(*model_, s, trial);
        const double freed = static_cast<double>(peak - p) + 1e-3 * static_cast<double>(current.held - trial.held);
        if (freed <= 0) continue;
        const double score = freed / (trial.cost - current.cost + 1.0);
        if (best == s.members.size() || score > best_score) best = k, best_score = score, best_peak = p;
      }
      if (best == s.members.size()) break;
      saved[best] = 0;
      current = solver::option_of(candidates_, s, saved, costs);
      peak = best_peak;
      answers.push_back(saved);
    }
  }

  // The integer program on one segment alone: its cheapest answers under a few local budgets.
  void segment_program_answers(const Segment& s, double seconds, std::vector<std::vector<char>>& answers) {
    solver::FormulationOptions f;
    f.members = s.members;
    f.fixed.assign(candidates_.size(), 0);
    f.bound_forward = false;
    const std::vector<double> costs = unit_costs();
    std::vector<SegmentOption> uniform;
    for (const std::vector<char>& a : answers) uniform.push_back(solver::option_of(candidates_, s, a, costs));
    auto [lo, hi] = local_range(s, uniform);
    const int points = 5;
    const double each = std::max(0.05, seconds / (points + 1));
    auto take = [&](const IntegerProgram::Result& r, solver::RematFormulation& form) {
      if (!r.solved) return;
      const Answer a = form.answer_of(r);
      std::vector<char> p;
      for (int m : s.members) p.push_back(a.saved[static_cast<size_t>(m)]);
      answers.push_back(std::move(p));
    };
    {
      solver::RematFormulation form = formulation(f);
      const IntegerProgram::Result r = form.build(std::nullopt, {}).minimize(std::min(each, deadline_.left()));
      take(r, form);
      if (r.solved) {
        const SegmentOption least = solver::option_of(candidates_, s, answers.back(), costs);
        lo = std::min(lo, solver::option_peak(*model_, s, least));
      }
    }
    for (int k = 0; k < points && !deadline_.passed(); ++k) {
      const int64_t limit = lo + (hi - lo) * k / points;
      solver::RematFormulation form = formulation(f);
      take(form.build(limit, {}).minimize(std::min(each, deadline_.left())), form);
    }
  }

  // The structured answer the model allows within `budget` (the least peak without one).
  std::optional<Answer> structured_answer(std::optional<int64_t> budget) {
    const auto start = Clock::now();
    std::optional<Answer> a = structured_answer_now(budget);
    structured_seconds_ = std::max(structured_seconds_, std::chrono::duration<double>(Clock::now() - start).count());
    return a;
  }
  std::optional<Answer> structured_answer_now(std::optional<int64_t> budget) {
    Answer a = uniform_for(true);
    if (chain_) {
      const std::optional<solver::ChainAnswer> c = solver::solve_chain(candidates_, *model_, segments_[0], *chain_, chain_options_, budget);
      if (!c) return std::nullopt;
      for (size_t k = 0; k < segments_[0].members.size(); ++k) a.saved[static_cast<size_t>(segments_[0].members[k])] = c->saved[k];
      return a;
    }
    if (options_by_segment_.empty()) return std::nullopt;
    std::optional<solver::SegmentChoice> choice;
    if (budget) choice = solver::cheapest_within(*model_, segments_, options_by_segment_, *budget);
    else choice = solver::smallest_peak(*model_, segments_, options_by_segment_);
    if (!choice) return std::nullopt;
    for (size_t g = 0; g < segments_.size(); ++g) {
      const SegmentOption& o = options_by_segment_[g][static_cast<size_t>(choice->option[g])];
      for (size_t k = 0; k < segments_[g].members.size(); ++k) a.saved[static_cast<size_t>(segments_[g].members[k])] = o.saved[k];
    }
    return a;
  }

  std::string structure_method() const {
    if (chain_)
      return "dynamic programming over " + plural(chain_->layers.size(), "alike layer", "alike layers") +
             " (runs recomputed from the exports kept below them)";
    return "dynamic programming over " + plural(segments_.size(), "segment", "segments") + " (each segment's answers " +
           (exhaustive_ ? std::string("all tried") : std::string("found on that segment alone")) + ")";
  }

  // The structured answer within budget, judged; one the planner finds over it recalibrates the
  // model, and the next is sought. The index into judged_ of the one within budget.
  std::optional<size_t> structured_within(int64_t budget, BudgetSolution& solution) {
    if (!chain_ && options_by_segment_.empty()) return std::nullopt;
    origin_ = "the structured search";
    // The model is not calibrated further here: with it fixed, the dynamic program's answers at the
    // grid's model budgets are the same whatever the budget, and the answer is the cheapest of them
    // planned within the budget. So a larger budget never costs more, and a smaller one never
    // plans a larger peak.
    const std::vector<int64_t> grid = model_budget_grid();
    auto within = [&](size_t k) -> std::optional<size_t> {
      const std::optional<Answer> a = grid_answer(grid, k);
      if (!a) return std::nullopt;
      const size_t j = judge_only(*a);
      if (judged_[j].peak > budget) return std::nullopt;
      return j;
    };
    std::optional<size_t> best;
    auto consider = [&](std::optional<size_t> j) {
      if (j && (!best || std::make_pair(ranked_cost(judged_[*j]), judged_[*j].peak) <
                             std::make_pair(ranked_cost(judged_[*best]), judged_[*best].peak)))
        best = j;
      return j.has_value();
    };
    // Every grid point where there is time for it; else a bisection: for the first model budget
    // the dynamic program answers at (the grid may start below what its held-byte grid reaches),
    // then for the largest whose answer the planner finds within the budget.
    if (time_for_every_grid_point()) {
      for (size_t k = 0; k < grid.size() && time_for_a_judgment(); ++k) consider(within(k));
    } else {
      // From the last grid point within the budget, up while the planner finds the answers
      // within it, else down, by bisection.
      size_t start = 0;
      while (start + 1 < grid.size() && grid[start + 1] <= budget) ++start;
      size_t lo = 0, hi = grid.size();  // within at lo-side, not at hi
      if (consider(within(start))) lo = start;
      else hi = start;
      if (hi == start) {
        size_t bottom = 0;
        while (bottom < hi && time_for_a_judgment(dp_seconds_)) {
          const size_t mid = bottom + (hi - bottom) / 2;
          if (consider(within(mid))) bottom = lo = mid, hi = std::min(hi, grid.size());
          else hi = mid;
          if (best) break;
        }
        if (!best) return std::nullopt;
        hi = start;
      }
      while (lo + 1 < hi && time_for_a_judgment(dp_seconds_)) {
        const size_t mid = lo + (hi - lo) / 2;
        if (consider(within(mid))) lo = mid;
        else hi = mid;
      }
    }
    if (!best) return std::nullopt;
    solution.method = structure_method();
    solution.segments = chain_ ? static_cast<int>(chain_->layers.size()) : static_cast<int>(segments_.size());
    solution.proven_optimal = true;
    if (chain_) {
      solution.optimal_among = "run answers";
    } else if (exhaustive_) {
      solution.optimal_among = "all answers, at the grid's model budgets";
    } else {
      solution.optimal_among = "the segments' options";
    }
    return best;
  }

  // Model budgets from the structured answer of least modelled peak to everything's: where the
  // model over-estimates, an answer the planner finds within the budget may need more of the model.
  std::vector<int64_t> model_budget_grid() {
    if (!grid_.empty()) return grid_;
    const std::optional<Answer>& least = least_;
    int64_t lo = least ? model_->peak(kept_anywhere(*least)) : 0;
    int64_t hi = model_->peak(uniform_for(true).saved);
    for (const Judged& j : judged_) hi = std::max(hi, model_->peak(kept_anywhere(j.answer)));
    lo = std::min(lo, hi);
    constexpr int kPoints = 48;
    for (int k = 0; k < kPoints; ++k) grid_.push_back(lo + (hi - lo) * k / (kPoints - 1));
    grid_.erase(std::unique(grid_.begin(), grid_.end()), grid_.end());
    return grid_;
  }
  bool time_for_every_grid_point() {
    const std::vector<int64_t> grid = model_budget_grid();
    grid_answer(grid, grid.size() - 1);  // times one
    return (dp_seconds_ + judge_seconds_) * static_cast<double>(grid.size()) < 0.5 * deadline_.left();
  }
  std::optional<Answer> grid_answer(const std::vector<int64_t>& grid, size_t k) {
    const auto it = grid_answers_.find(k);
    if (it != grid_answers_.end()) return it->second;
    const auto start = Clock::now();
    std::optional<Answer> a = structured_answer(grid[k]);
    dp_seconds_ = std::max(dp_seconds_, std::chrono::duration<double>(Clock::now() - start).count());
    return grid_answers_[k] = a;
  }

  // The model adds what other answers measured to every stage, so it can over-estimate an answer
  // by more than the budget's slack. Then the method is asked for more than the budget, by
  // bisection, while the planner still finds its answers within the budget: the cheapest of those.
  template <typename Solve>
  size_t stretch(int64_t budget, size_t best, Solve solve) {
    const int64_t over = model_->peak(kept_anywhere(judged_[best].answer)) - judged_[best].peak;
    int64_t lo = budget, hi = budget + std::max<int64_t>(0, over) + (budget - judged_[best].peak);
    for (int round = 0; round < 8 && hi - lo > std::max<int64_t>(budget / 2000, 4096) && time_for_a_judgment(); ++round) {
      const int64_t ask = round == 0 ? hi : lo + (hi - lo) / 2;
      const std::optional<Answer> a = solve(ask);
      if (!a) break;
      const size_t j = judge_answer(*a);
      if (judged_[j].peak <= budget) {
        if (judged_[j].cost < judged_[best].cost) best = j;
        lo = ask;
      } else {
        hi = ask;
      }
    }
    return best;
  }

  // The smallest peak: the structured one and, for one general segment, the integer program's,
  // judged.
  void probe_smallest() {
    if ((chain_ || !options_by_segment_.empty()) && time_for_every_grid_point()) {
      const std::vector<int64_t> grid = model_budget_grid();
      for (size_t k = 0; k < grid.size() && time_for_a_judgment(); ++k)
        if (const std::optional<Answer> a = grid_answer(grid, k)) judge_only(*a);
    }
    if (!IntegerProgram::available() || chain_ || !options_by_segment_.empty() || !integer_program_fits()) return;
    origin_ = "the integer program";
    solver::RematFormulation f = formulation();
    // (Called for --budget min or a budget below every peak found: the smallest peak is the question.)
    const double seconds = std::min(deadline_.left() - 1.2 * judge_seconds_, deadline_.left() / 2);
    if (seconds <= 0) return;
    const IntegerProgram::Result r = f.build(std::nullopt, cuts_).minimize(seconds);
    if (r.solved && time_for_a_judgment()) judge_answer(f.answer_of(r));
  }

  // --- The integer program ----------------------------------------------------------------------

  // Whether the whole program's integer program is small enough to build and solve in time:
  // candidates times the moments each can be alive at, within a few hundred thousand columns.
  bool integer_program_fits(int64_t most = 300000) const {
    int64_t columns = 0;
    for (const Candidate& c : candidates_) columns += 6 + (c.earliest < 0 ? 0 : 2 * (c.latest - c.earliest + 1));
    return columns <= most;
  }

  // The exact search; the index into judged_ of its answer, or none when time ran out first.
  std::optional<size_t> exact(int64_t budget, BudgetSolution& solution, double seconds) {
    origin_ = "the integer program";
    bool first = true;
    const double until = deadline_.elapsed() + seconds;
    while (time_for_a_judgment(0.05) && deadline_.elapsed() < until) {
      solver::RematFormulation f = formulation();
      IntegerProgram ip = f.build(budget, cuts_);
      if (const std::optional<Answer> start = start_for(budget)) ip.set_start(f.start_of(*start));
      const IntegerProgram::Result r = ip.minimize(std::min(until - deadline_.elapsed(), deadline_.left() - 1.2 * judge_seconds_));
      // (A model that finds no answer within the budget bounds nothing: the planner may still.)
      if (first && r.bound_known && !r.infeasible) {
        solution.lower_bound = r.bound * cost_scale();
        solution.bound_known = true;
        first = false;
      }
      if (!r.solved) {
        if (r.infeasible)
          exact_gave_up_ = cuts_.empty() ? "the integer program found no answer the memory model fits within the budget"
                                         : "the integer program's answers planned over the budget";
        break;
      }
      const Answer a = f.answer_of(r);
      const size_t j = judge_answer(a);
      if (judged_[j].peak <= budget) {
        solution.method = r.optimal ? "integer program (COIN-OR CBC), optimal within 0.1% for the memory model"
                                    : "integer program (COIN-OR CBC), stopped at the time limit";
        solution.proven_optimal = r.optimal;
        solution.optimal_among.clear();
        if (r.bound_known) {
          solution.lower_bound = (r.optimal ? r.objective : r.bound) * cost_scale();
          solution.bound_known = true;
        }
        const size_t stretched = stretch(budget, j, [&](int64_t ask) -> std::optional<Answer> {
          solver::RematFormulation g = formulation();
          IntegerProgram more = g.build(ask, cuts_);
          more.set_start(g.start_of(judged_[j].answer));
          const double seconds = std::min(until - deadline_.elapsed(), deadline_.left() - 1.2 * judge_seconds_) / 3;
          if (seconds <= 0.01) return std::nullopt;
          const IntegerProgram::Result m = more.minimize(seconds);
          if (!m.solved) return std::nullopt;
          return g.answer_of(m);
        });
        if (stretched != j)
          solution.method += ", asked for more than the budget where the model over-estimates (each answer planned)";
        return stretched;
      }
      cuts_.push_back(solver::cut_of(candidates_, a));
    }
    return std::nullopt;
  }

  // Candidates by what recomputing them costs per byte, most first: what a greedy search saves first.
  std::vector<size_t> by_cost_per_byte() const {
    std::vector<size_t> order(candidates_.size());
    std::iota(order.begin(), order.end(), 0);
    auto per_byte = [&](size_t i) {
      return unit_cost(i) / static_cast<double>(std::max<int64_t>(candidates_[i].bytes + candidates_[i].stack_bytes, 1));
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return per_byte(x) > per_byte(y); });
    return order;
  }

  // `a` with candidate i saved, and with it every candidate of its signature when they must agree.
  Answer saving(const Answer& a, size_t i) const {
    Answer trial = a;
    for (size_t j = 0; j < candidates_.size(); ++j)
      if (j == i || (options_.jax_signatures && candidates_[j].signature == candidates_[i].signature)) trial.saved[j] = 1;
    return trial;
  }

  // A start for the integer program: from the judged answer of least modelled peak, save greedily
  // while the modelled peak stays within the budget. None when even that one does not fit.
  std::optional<Answer> start_for(int64_t budget) const {
    const Answer* least = nullptr;
    int64_t least_peak = INT64_MAX;
    double least_cost = 0;
    for (const Judged& j : judged_) {
      if (options_.jax_signatures && !agrees_by_signature(j.answer)) continue;
      const int64_t p = model_->peak(kept_anywhere(j.answer));
      // The cheapest that fits, else the smallest.
      const bool fits = p <= budget, least_fits = least_peak <= budget;
      if (!least || (fits && (!least_fits || j.cost < least_cost)) || (!fits && !least_fits && p < least_peak))
        least = &j.answer, least_peak = p, least_cost = j.cost;
    }
    if (!least) return std::nullopt;
    Answer a = *least;
    if (least_peak > budget && !descend_to(budget, a)) return std::nullopt;
    for (size_t i : by_cost_per_byte()) {
      if (deadline_.passed()) break;
      if (a.saved[i] || a.offloaded[i] || !solver::effects_of(candidates_, kept_anywhere(a)).recomputed[i]) continue;
      Answer trial = saving(a, i);
      if (model_->peak(kept_anywhere(trial)) <= budget) a = std::move(trial);
    }
    return a;
  }

  // Changes `a`, one decision at a time, the one that lowers its modelled peak most, until the model
  // finds it within `budget` (true) or no change lowers it (false): an answer the integer program
  // can start from where the model finds every judged one over budget.
  bool descend_to(int64_t budget, Answer& a) const {
    int64_t over = model_->excess(kept_anywhere(a), budget);
    while (over > 0 && !deadline_.passed()) {
      const solver::Effects fx = solver::effects_of(candidates_, kept_anywhere(a));
      int64_t best_over = over;
      Answer best;
      for (size_t i = 0; i < candidates_.size(); ++i) {
        if (!fx.needed[i] || a.offloaded[i]) continue;
        Answer trial = a;
        for (size_t j = 0; j < candidates_.size(); ++j)
          if (j == i || (options_.jax_signatures && candidates_[j].signature == candidates_[i].signature)) trial.saved[j] = !a.saved[i];
        const int64_t o = model_->excess(kept_anywhere(trial), budget);
        if (o < best_over) best_over = o, best = std::move(trial);
      }
      if (best_over == over) return false;
      a = std::move(best);
      over = best_over;
    }
    return over == 0;
  }

  // The cheapest judged answer within budget, improved greedily (keep_more).
  size_t greedy(int64_t budget, const Budget& wanted, BudgetSolution& solution) {
    size_t best = judged_.size();
    for (size_t j = 0; j < judged_.size(); ++j)
      if (fits(j, budget) && (best == judged_.size() || judged_[j].cost < judged_[best].cost)) best = j;
    if (best == judged_.size()) fail("no decisions found within the budget " + wanted.text);
    // The model's gate only where it stands between the search and more planner calls than fit.
    const std::string start = judged_[best].origin;
    best = keep_more(budget, best, IntegerProgram::available() && !time_to_plan_each_change(best)).first;
    solution.method = "greedy from " + start + "'s answer" +
                      (IntegerProgram::available() ? ", after " + exact_gave_up_ : " (this rematkit was built without COIN-OR CBC)");
    solution.proven_optimal = false;
    solution.optimal_among.clear();
    return best;
  }

  // From judged answer `from`, save each recomputed candidate in turn, the costliest per byte
  // first, and keep the change where the planner still finds the peak within the budget. With
  // `model_gate`, a change the model finds over budget is not planned. The answer reached and the
  // number of changes kept.
  std::pair<size_t, int> keep_more(int64_t budget, size_t from, bool model_gate, double seconds = 1e9) {
    const double until = deadline_.elapsed() + seconds;
    size_t best = from;
    int kept = 0;
    Answer a = judged_[from].answer;
    origin_ = "a search on the planner starting at " + judged_[from].origin;
    for (size_t i : by_cost_per_byte()) {
      if (!time_for_a_judgment() || deadline_.elapsed() + judge_seconds_ > until) break;
      const solver::Effects fx = solver::effects_of(candidates_, kept_anywhere(a));
      if (a.saved[i] || a.offloaded[i] || !fx.recomputed[i]) continue;
      const Answer trial = saving(a, i);
      if (model_gate && model_->peak(kept_anywhere(trial)) > budget) continue;
      const size_t j = judge_only(trial);
      if (judged_[j].peak <= budget) a = trial, best = j, ++kept;
    }
    return {best, kept};
  }

  // PyTorch's knapsack's order on the planner: everything saved but the k values cheapest to
  // recompute per byte. Peaks fall roughly as k grows, and the cheapest values go first.
  Answer knapsack_order_answer(size_t k) const {
    const std::vector<size_t> order = by_cost_per_byte();  // costliest per byte first
    Answer a = uniform_for(true);
    for (size_t i = 0; i < k && i < order.size(); ++i) a.saved[order[order.size() - 1 - i]] = 0;
    return a;
  }
  size_t knapsack_grid_step() const { return std::max<size_t>(1, candidates_.size() / 16); }

  // Whether the program is one general segment, the integer program's, with the planner-side
  // searches beside it (not for --no-structure, nor for an export, whose answers keep one decision
  // per signature).
  bool general_segment() const {
    return options_.structure && !options_.jax_signatures && !chain_ && options_by_segment_.empty() &&
           IntegerProgram::available() && integer_program_fits();
  }

  // The knapsack order at 17 points from everything saved to nothing saved, and PyTorch's
  // knapsack_budget(f) at f = 0.05, 0.10, ..., 0.95, planned: the same answers whatever the budget.
  // (Recomputing only values that cost nothing, data movement, often plans below
  // nothing_saveable's peak; on large/38 knapsack_budget(0.25) plans below both, and below
  // every tenth's answer.)
  void knapsack_grid() {
    origin_ = "the planner's knapsack order";
    for (size_t k = 0; k <= candidates_.size() && time_for_a_judgment(); k += knapsack_grid_step())
      judge_only(knapsack_order_answer(k));
    if (!plugins_.policies().contains("knapsack_budget")) return;
    for (int twentieth = 1; twentieth <= 19 && time_for_a_judgment(); ++twentieth) {
      const std::string spec = "knapsack_budget(0." + std::string(twentieth < 2 ? "0" : "") + std::to_string(5 * twentieth) + ")";
      origin_ = "PyTorch's " + spec;
      judge_only(answer_of_policy(spec));
    }
  }

  // Before the integer program, a quarter of the time at most: the least k of the knapsack order
  // planned within the budget (a grid of 16, then bisection below it), then keep_more from it
  // without the model's gate. So the answer does not rest on the integer program finishing where
  // the model over-estimates.
  void seed_on_planner(int64_t budget) {
    const double until = deadline_.elapsed() + deadline_.left() / 4;
    origin_ = "the planner's knapsack order";
    auto fits = [&](size_t k) {
      return time_for_a_judgment() && deadline_.elapsed() + judge_seconds_ < until &&
             judged_[judge_only(knapsack_order_answer(k))].peak <= budget;
    };
    const size_t n = candidates_.size(), step = knapsack_grid_step();
    size_t hi = 0;
    while (hi < n && !fits(hi)) hi = std::min(n, hi + step);
    if (hi >= n && !fits(n)) return;
    size_t lo = hi >= step ? hi - step : 0;
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? hi : lo) = mid;
    }
    keep_more(budget, judge_only(knapsack_order_answer(hi)), false, until - deadline_.elapsed());
  }

  // A judged answer within the budget that recomputes nothing costly: none is cheaper.
  std::optional<size_t> free_answer(int64_t budget, BudgetSolution& solution) const {
    for (size_t j = 0; j < judged_.size(); ++j)
      if (fits(j, budget) && judged_[j].cost == 0) {
        solution.method = judged_[j].origin + ", recomputing only what costs nothing";
        solution.proven_optimal = solution.bound_known = true;
        solution.lower_bound = 0;
        return j;
      }
    return std::nullopt;
  }

  // Whether there is time to plan keep_more's every change from judged answer `from`.
  bool time_to_plan_each_change(size_t from) const {
    const solver::Effects fx = solver::effects_of(candidates_, kept_anywhere(judged_[from].answer));
    const auto changes = std::count(fx.recomputed.begin(), fx.recomputed.end(), 1);
    return changes > 0 && 1.2 * judge_seconds_ * static_cast<double>(changes) < deadline_.left();
  }

  // The memory model over-estimates some answers (a stage's base holds the most any judged answer
  // measured beyond its modelled bytes), so an answer it finds at the budget may plan well within
  // it. Where a planner call is cheap beside the time left, keep_more without the model's gate.
  void improve_on_planner(int64_t budget, size_t& found, BudgetSolution& solution) {
    if (!time_to_plan_each_change(found)) return;
    const auto [best, kept] = keep_more(budget, found, false);
    if (judged_[best].cost >= judged_[found].cost) return;
    found = best;
    solution.method += "; then " + std::to_string(kept) +
                       " more kept, each planned within the budget where the model over-estimated it";
  }

  BudgetSolution finish(size_t index, BudgetSolution& solution) {
    const Judged& j = judged_[index];  // judged already: its peak and counts are the planner's
    const solver::Effects fx = solver::effects_of(candidates_, kept_anywhere(j.answer));
    for (size_t i = 0; i < candidates_.size(); ++i) {
      const Candidate& c = candidates_[i];
      SolvedEquation e;
      e.site = c.site;
      e.primitive = c.primitive;
      e.signature = c.signature;
      e.type = c.type;
      e.where = c.where;
      e.decision = j.answer.offloaded[i] ? Decision::kOffloadable : j.answer.saved[i] ? Decision::kSaveable : Decision::kRecompute;
      e.read_by_backward = fx.needed[i] != 0;
      e.iterations = timeline_.levels[static_cast<size_t>(c.level)].iterations;
      e.bytes = c.stack_bytes > 0 ? c.stack_bytes : c.bytes;
      e.cost = unit_cost(i);
      solution.equations.push_back(std::move(e));
    }
    solution.whole_program = whole_program_;
    solution.cost_kind = options_.cost;
    solution.peak_bytes = j.peak;
    solution.smallest_peak = smallest_;
    solution.everything_peak = everything_.arena_peak;
    solution.fraction_zero_peak = fraction_zero_;
    solution.residual_bytes = j.residual_bytes;
    solution.recompute_flops = j.recompute_flops;
    solution.cost = j.cost;
    if (solution.lower_bound > solution.cost) solution.lower_bound = solution.cost;
    solution.planner_calls = judge_.calls();
    solution.seconds = deadline_.elapsed();
    solution.structured_seconds = structured_seconds_;
    return solution;
  }

  // FLOPs as the planner counts them; measured nanoseconds as the model sums them.
  double ranked_cost(const Judged& j) const {
    return options_.cost == RecomputeCost::kMeasured ? j.cost : j.recompute_flops;
  }

  const BudgetOptions& options_;
  const PluginRegistry& plugins_;
  bool whole_program_;
  PlannerJudge judge_;
  solver::Deadline deadline_;
  double judge_seconds_ = 0.0;
  double structured_seconds_ = 0.0;
  double dp_seconds_ = 0.0;
  std::vector<int64_t> grid_;
  std::optional<Answer> least_;  // the structured answer of least modelled peak
  std::map<size_t, std::optional<Answer>> grid_answers_;
  Verdict everything_;
  std::vector<Candidate> candidates_;
  solver::Timeline timeline_;
  std::vector<double> measured_ns_;  // per candidate, with --cost measured
  std::optional<MemoryModel> model_;
  std::vector<Judged> judged_;
  std::vector<solver::Cut> cuts_;
  std::string origin_ = "JAX's everything_saveable";  // what the next judged answer is called
  // Why the exact methods gave no answer, when the greedy search stands in.
  std::string exact_gave_up_ = "the exact methods ran out of time";
  std::vector<Answer> seeds_;
  int64_t smallest_ = INT64_MAX;
  int64_t fraction_zero_ = 0;
  std::vector<Segment> segments_;
  std::optional<solver::Chain> chain_;
  solver::ChainOptions chain_options_;
  std::vector<std::vector<SegmentOption>> options_by_segment_;
  std::map<int, std::vector<std::vector<char>>> answers_by_shape_;  // per member position
  std::vector<int> needs_program_;  // shapes whose options the integer program adds
  bool exhaustive_ = false;
};

}  // namespace

RecomputeCost parse_recompute_cost(const std::string& text, const std::string& what) {
  if (text == "flops") return RecomputeCost::kFlops;
  if (text == "measured") return RecomputeCost::kMeasured;
  fail(what + ": '" + text + "' is neither flops nor measured");
}

Budget parse_budget(const std::string& text, const std::string& what) {
  Budget b;
  b.text = text;
  if (text == "min") {
    b.smallest = true;
    return b;
  }
  const std::optional<ByteSize> size = parse_byte_size(text);
  if (!size)
    fail(what + ": '" + text + "' is not a budget (bytes such as 64MiB or 1e9, a fraction between 0 and 1, or min)");
  // A bare number up to 1 is a fraction; anything with a unit, or above 1, is bytes.
  if (size->unit.empty() && size->number <= 1.0 && text.find_first_of("eE") == std::string::npos) {
    b.is_fraction = true;
    b.value = size->number;
  } else {
    b.value = size->bytes;
  }
  return b;
}

bool budget_solver_is_exact() { return IntegerProgram::available(); }

BudgetSolution solve_budget(const Program& program, const BudgetOptions& options) {
  Search search(program, options);
  search.prepare();
  return search.answer(options.budget);
}

std::vector<BudgetSolution> solve_budgets(const Program& program, const BudgetOptions& options,
                                          const std::vector<Budget>& budgets) {
  Search search(program, options);
  search.prepare();
  return search.answers(budgets);
}

Linearization linearize_solution(const Program& program, const BudgetSolution& solution, const BudgetOptions& options) {
  const PluginRegistry& plugins = options.plugins ? *options.plugins : default_plugins();
  DecisionTable table;
  for (const SolvedEquation& e : solution.equations) table.by_site[e.site] = e.decision;
  const PlannerJudge judge(program, solution.whole_program, plugins.policies(), BackendOptions{}, options.differentiate,
                           options.mesh);
  return judge.linearize_with(table);
}

}  // namespace rematkit
