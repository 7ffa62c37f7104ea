#include "structure.hpp"

#include <algorithm>

namespace rematkit::solver {
namespace {

// A segment of this many candidates or fewer (that the backward pass may need) has every answer
// tried: 2^10 option profiles.
constexpr size_t kEveryAnswer = 10;
// A segment of this many or fewer gets options from the integer program on it too.
constexpr size_t kProgramOptions = 64;

std::string plural(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

ChainOptions chain_options(const Problem& problem, const Chain& chain, const std::vector<Answer>& seeds,
                           const Deadline& deadline) {
  ChainOptions o;
  o.unit_cost = problem.unit_costs();
  o.deadline = deadline.end();
  // The seeds' layer patterns, from a layer in the middle of the chain.
  const std::vector<int>& layer = chain.layers[chain.layers.size() / 2];
  for (const Answer& seed : seeds) {
    std::vector<char> p;
    for (int m : layer) p.push_back(seed.saved[static_cast<size_t>(m)]);
    o.patterns.push_back(std::move(p));
  }
  return o;
}

// The range of a segment's peak alone: everything saved, and the least the model allows.
std::pair<int64_t, int64_t> local_range(const MemoryModel& model, const Segment& s, const std::vector<SegmentOption>& uniform) {
  int64_t lo = INT64_MAX, hi = 0;
  for (const SegmentOption& o : uniform) {
    const int64_t p = option_peak(model, s, o);
    lo = std::min(lo, p), hi = std::max(hi, p);
  }
  return {lo, hi};
}

// A chain inside one segment: its run answers at a few budgets.
void chain_segment_answers(const Problem& problem, const MemoryModel& model, const Segment& s, const Chain& chain,
                           const Deadline& deadline, std::vector<std::vector<char>>& answers) {
  ChainOptions o;
  o.unit_cost = problem.unit_costs();
  o.deadline = deadline.end();
  const std::optional<ChainAnswer> least = solve_chain(problem.candidates, model, s, chain, o, std::nullopt);
  if (!least) return;
  answers.push_back(least->saved);
  const SegmentOption all = option_of(problem.candidates, s, std::vector<char>(s.members.size(), 1), o.unit_cost);
  const int64_t hi = option_peak(model, s, all);
  for (int k = 1; k <= 6; ++k) {
    const int64_t limit = least->peak + (hi - least->peak) * k / 7;
    if (std::optional<ChainAnswer> a = solve_chain(problem.candidates, model, s, chain, o, limit))
      answers.push_back(a->saved);
  }
}

// A path from everything saved to nothing saved, one decision at a time: each step recomputes the
// value whose recomputation lowers the segment's peak most for what it costs. Its answers trade
// the segment's bytes for recomputation; the integer program may add better ones.
void descent_answers(const Problem& problem, const MemoryModel& model, const Segment& s, const Deadline& deadline,
                     std::vector<std::vector<char>>& answers) {
  const std::vector<Candidate>& candidates = problem.candidates;
  const std::vector<double> costs = problem.unit_costs();
  std::vector<char> saved(s.members.size(), 1);
  SegmentOption current = option_of(candidates, s, saved, costs);
  int64_t peak = option_peak(model, s, current);
  for (size_t step = 0; step < s.members.size() && !deadline.passed(); ++step) {
    size_t best = s.members.size();
    double best_score = 0;
    int64_t best_peak = 0;
    for (size_t k = 0; k < s.members.size(); ++k) {
      if (!saved[k] || candidates[static_cast<size_t>(s.members[k])].earliest < 0) continue;
      saved[k] = 0;
      const SegmentOption trial = option_of(candidates, s, saved, costs);
      saved[k] = 1;
      const int64_t p = option_peak(model, s, trial);
      const double freed = static_cast<double>(peak - p) + 1e-3 * static_cast<double>(current.held - trial.held);
      if (freed <= 0) continue;
      const double score = freed / (trial.cost - current.cost + 1.0);
      if (best == s.members.size() || score > best_score) best = k, best_score = score, best_peak = p;
    }
    if (best == s.members.size()) break;
    saved[best] = 0;
    current = option_of(candidates, s, saved, costs);
    peak = best_peak;
    answers.push_back(saved);
  }
}

// The integer program on one segment alone: its cheapest answers under a few local budgets.
void segment_program_answers(const Problem& problem, const MemoryModel& model, const Segment& s, double seconds,
                             const Deadline& deadline, std::vector<std::vector<char>>& answers) {
  FormulationOptions f;
  f.members = s.members;
  f.fixed.assign(problem.candidates.size(), 0);
  f.bound_forward = false;
  const std::vector<double> costs = problem.unit_costs();
  std::vector<SegmentOption> uniform;
  for (const std::vector<char>& a : answers) uniform.push_back(option_of(problem.candidates, s, a, costs));
  auto [lo, hi] = local_range(model, s, uniform);
  const int points = 5;
  const double each = std::max(0.05, seconds / (points + 1));
  auto take = [&](const IntegerProgram::Result& r, RematFormulation& form) {
    if (!r.solved) return;
    const Answer a = form.answer_of(r);
    std::vector<char> p;
    for (int m : s.members) p.push_back(a.saved[static_cast<size_t>(m)]);
    answers.push_back(std::move(p));
  };
  {
    RematFormulation form = problem.formulation(model, f);
    const IntegerProgram::Result r = form.build(std::nullopt, {}).minimize(std::min(each, deadline.left()));
    take(r, form);
    if (r.solved) {
      const SegmentOption least = option_of(problem.candidates, s, answers.back(), costs);
      lo = std::min(lo, option_peak(model, s, least));
    }
  }
  for (int k = 0; k < points && !deadline.passed(); ++k) {
    const int64_t limit = lo + (hi - lo) * k / points;
    RematFormulation form = problem.formulation(model, f);
    take(form.build(limit, {}).minimize(std::min(each, deadline.left())), form);
  }
}

void make_segment_options(const Problem& problem, Structure& structure) {
  const std::vector<double> costs = problem.unit_costs();
  structure.options_by_segment.clear();
  for (const Segment& s : structure.segments) {
    std::vector<SegmentOption> options;
    for (const std::vector<char>& saved : structure.answers_by_shape[s.shape])
      options.push_back(option_of(problem.candidates, s, saved, costs));
    keep_undominated(options);
    structure.options_by_segment.push_back(std::move(options));
  }
}

// The members of `s` whose answer can matter (the backward pass may need them).
std::vector<size_t> free_members(const Problem& problem, const Segment& s) {
  std::vector<size_t> free;
  for (size_t k = 0; k < s.members.size(); ++k)
    if (problem.candidates[static_cast<size_t>(s.members[k])].earliest >= 0) free.push_back(k);
  return free;
}

// Per segment, the answers the dynamic program chooses among: the uniform ones and the seeds',
// and every answer (a segment of few candidates), or a chain's run answers at a few budgets; for
// other segments, add_program_options() adds the integer program's. Alike segments share them.
void segment_options(const Problem& problem, const MemoryModel& model, const std::vector<Answer>& seeds,
                     const Deadline& deadline, Structure& structure) {
  structure.exhaustive = true;
  for (const Segment& s : structure.segments) {
    if (structure.answers_by_shape.count(s.shape)) continue;
    std::vector<std::vector<char>>& answers = structure.answers_by_shape[s.shape];
    answers.push_back(std::vector<char>(s.members.size(), 1));
    answers.push_back(std::vector<char>(s.members.size(), 0));
    for (const Answer& seed : seeds) {
      std::vector<char> p;
      for (int m : s.members) p.push_back(seed.saved[static_cast<size_t>(m)]);
      answers.push_back(std::move(p));
    }
    const std::vector<size_t> free = free_members(problem, s);
    if (free.size() <= kEveryAnswer) {
      for (uint32_t bits = 0; bits < (1u << free.size()); ++bits) {
        std::vector<char> p(s.members.size(), 1);
        for (size_t f = 0; f < free.size(); ++f) p[free[f]] = (bits >> f) & 1;
        answers.push_back(std::move(p));
      }
      continue;
    }
    structure.exhaustive = false;
    if (std::optional<Chain> chain = find_chain(problem.candidates, s)) {
      chain_segment_answers(problem, model, s, *chain, deadline, answers);
    } else {
      descent_answers(problem, model, s, deadline, answers);
      // The integer program refines a segment it can solve in a fraction of a second; a larger
      // one (a transformer block) keeps the descent's options, found the same at any limit.
      if (free.size() <= kProgramOptions) structure.needs_program.push_back(s.shape);
    }
  }
  make_segment_options(problem, structure);
}

}  // namespace

std::string Structure::method() const {
  if (chain)
    return "dynamic programming over " + plural(chain->layers.size(), "alike layer", "alike layers") +
           " (runs recomputed from the exports kept below them)";
  return "dynamic programming over " + plural(segments.size(), "segment", "segments") + " (each segment's answers " +
         (exhaustive ? std::string("all tried") : std::string("found on that segment alone")) + ")";
}

Structure find_structure(const Problem& problem, const MemoryModel& model, const std::vector<Answer>& seeds,
                         const Deadline& deadline) {
  Structure structure;
  structure.segments = find_segments(problem.candidates, static_cast<int>(problem.timeline.moments.size()));
  const BudgetOptions& options = problem.options;
  if (options.jax_signatures || options.allow_offload || !options.structure) return structure;
  const std::vector<Segment>& segments = structure.segments;
  if (segments.size() == 1 || (segments.size() == 2 && segments[1].last_moment < 0)) {
    structure.chain = find_chain(problem.candidates, segments[0]);
    if (structure.chain) {
      structure.chain_options = chain_options(problem, *structure.chain, seeds, deadline);
      return structure;
    }
    // One general segment: the integer program's, unless it is small enough to try every answer.
    if (free_members(problem, segments[0]).size() > kEveryAnswer) return structure;
  }
  if (!segments.empty()) segment_options(problem, model, seeds, deadline, structure);
  return structure;
}

void add_program_options(const Problem& problem, const MemoryModel& model, Structure& structure, const Deadline& deadline) {
  if (structure.needs_program.empty() || !IntegerProgram::available()) return;
  // A sixth of the time: the descent's options usually carry the answer; the program's refine it.
  const double share = deadline.left() / 6 / static_cast<double>(structure.needs_program.size());
  for (int shape : structure.needs_program)
    for (const Segment& s : structure.segments)
      if (s.shape == shape) {
        segment_program_answers(problem, model, s, share, deadline, structure.answers_by_shape[shape]);
        break;
      }
  make_segment_options(problem, structure);
}

bool general_segment(const Problem& problem, const Structure& structure) {
  return problem.options.structure && !problem.options.jax_signatures && !structure.found() &&
         IntegerProgram::available() && problem.integer_program_fits();
}

}  // namespace rematkit::solver
