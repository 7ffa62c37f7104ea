// The budget solver's dynamic programs (solver/src/chain_dp.hpp, segment_dp.hpp) against brute force
// over the same memory model (remat_model.hpp, uncalibrated: every stage's base 0, so a peak is
// the candidates' own bytes): on uniform chains, every answer tried for a few layers, every run
// answer (which layers' outputs are kept) up to 16; on per-layer checkpoints, every answer. At every
// budget the brute force can tell apart (each answer's peak), the program's answer costs the least
// any answer within it costs, and the peak it reports is the model's for its answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "chain_dp.hpp"
#include "remat_model.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "segment_dp.hpp"

namespace rematkit::solver {
namespace {

// x -> sin -> ... -> sin (n layers, each one sin whose JVP adds cos) inside one checkpoint.
Program sin_chain(int layers) {
  const std::string t = "f32[4096]";
  std::string body, last = "b";
  for (int i = 0; i < layers; ++i) {
    body += "          v" + std::to_string(i) + ":" + t + " = sin " + last + "\n";
    last = "v" + std::to_string(i);
  }
  return parse_program("{ lambda ; x:" + t + ". let\n    a:" + t + " = checkpoint[\n      differentiated=False\n" +
                           "      jaxpr={ lambda ; b:" + t + ". let\n" + body + "        in (" + last + ",) }\n" +
                           "      policy=everything_saveable\n      prevent_cse=True\n    ] x\n" +
                           "    l:f32[] = reduce_sum[axes=(0,) out_sharding=None] a\n  in (l,) }\n",
                       "sin_chain");
}

// Dense layers (dot_general, tanh) decided as a whole program, as `rematkit solve` decides a
// program without a checkpoint.
Program tanh_chain(int layers) {
  const std::string t = "f32[16,32]", w = "f32[32,32]";
  std::string args, body, last = "x";
  for (int i = 0; i < layers; ++i) {
    args += " w" + std::to_string(i) + ":" + w;
    body += "    a" + std::to_string(i) + ":" + t + " = dot_general[dimension_numbers=(([1], [0]), ([], [])) " +
            "precision=None preferred_element_type=float32] " + last + " w" + std::to_string(i) + "\n";
    body += "    h" + std::to_string(i) + ":" + t + " = tanh a" + std::to_string(i) + "\n";
    last = "h" + std::to_string(i);
  }
  return parse_program("{ lambda ; x:" + t + args + ". let\n" + body + "    l:f32[] = reduce_sum[axes=(0, 1)] " + last +
                           "\n  in (l,) }\n",
                       "tanh_chain");
}

// Per-layer checkpoints of different sizes: sin, sin * sin, and exp then sin.
Program per_layer_checkpoints() {
  return parse_program(R"({ lambda ; x:f32[2048]. let
    a:f32[2048] = checkpoint[
      differentiated=False
      jaxpr={ lambda ; b:f32[2048]. let c:f32[2048] = sin b in (c,) }
      policy=everything_saveable
      prevent_cse=True
    ] x
    d:f32[2048] = checkpoint[
      differentiated=False
      jaxpr={ lambda ; e:f32[2048]. let f:f32[2048] = sin e; g:f32[2048] = mul f f in (g,) }
      policy=everything_saveable
      prevent_cse=True
    ] a
    h:f32[4096] = concatenate[dimension=0] d d
    i:f32[4096] = checkpoint[
      differentiated=False
      jaxpr={ lambda ; j:f32[4096]. let k:f32[4096] = exp j; l:f32[4096] = sin k in (l,) }
      policy=everything_saveable
      prevent_cse=True
    ] h
    m:f32[] = reduce_sum[axes=(0,) out_sharding=None] i
  in (m,) })",
                       "per_layer");
}

// A program's candidates and moments, and the memory model over them with nothing calibrated.
class Fixture {
 public:
  explicit Fixture(const Program& program, bool whole_program = false) {
    LinearizeOptions o;
    o.policies = &default_plugins().policies();
    if (whole_program) o.policy = "everything_saveable";
    lin_ = linearize(program, o);
    candidates = find_candidates(lin_, timeline);
    model = std::make_unique<MemoryModel>(candidates, timeline);
    segments = find_segments(candidates, static_cast<int>(timeline.moments.size()));
    for (const Candidate& c : candidates) cost.push_back(c.flops);
  }
  Fixture(const Fixture&) = delete;

  double cost_of(const std::vector<char>& saved) const {
    const Effects fx = effects_of(candidates, saved);
    double total = 0;
    for (size_t i = 0; i < candidates.size(); ++i)
      if (fx.recomputed[i]) total += cost[i];
    return total;
  }
  // Per member answer of a segment, the whole program's answer (everything else saved).
  std::vector<char> whole(const Segment& s, const std::vector<char>& members) const {
    std::vector<char> saved(candidates.size(), 1);
    for (size_t k = 0; k < s.members.size(); ++k) saved[static_cast<size_t>(s.members[k])] = members[k];
    return saved;
  }

  std::vector<Candidate> candidates;
  Timeline timeline;
  std::unique_ptr<MemoryModel> model;
  std::vector<Segment> segments;
  std::vector<double> cost;

 private:
  Linearization lin_;
};

// Brute force: the least cost at each peak, over the answers `answers` enumerates.
std::map<int64_t, double> least_cost_by_peak(const Fixture& f, const std::vector<std::vector<char>>& answers) {
  std::map<int64_t, double> best;
  for (const std::vector<char>& a : answers) {
    const int64_t peak = f.model->peak(a);
    const double c = f.cost_of(a);
    auto [it, fresh] = best.try_emplace(peak, c);
    if (!fresh) it->second = std::min(it->second, c);
  }
  // Within a budget: the least cost of any peak up to it.
  double running = 1e300;
  for (auto& [peak, c] : best) running = c = std::min(running, c);
  return best;
}

// Every answer over the candidates the backward pass may need (the rest saved).
std::vector<std::vector<char>> every_answer(const Fixture& f) {
  std::vector<size_t> free;
  for (size_t i = 0; i < f.candidates.size(); ++i)
    if (f.candidates[i].earliest >= 0) free.push_back(i);
  EXPECT_LE(free.size(), 18u);
  std::vector<std::vector<char>> out;
  for (uint32_t bits = 0; bits < (1u << free.size()); ++bits) {
    std::vector<char> a(f.candidates.size(), 1);
    for (size_t k = 0; k < free.size(); ++k) a[free[k]] = (bits >> k) & 1;
    out.push_back(std::move(a));
  }
  return out;
}

void expect_chain_matches(const Fixture& f, const Chain& chain, const ChainOptions& options,
                          const std::map<int64_t, double>& brute, const std::string& what) {
  ASSERT_EQ(f.segments.size(), 1u) << what;
  const Segment& s = f.segments[0];
  for (const auto& [budget, least] : brute) {
    const std::optional<ChainAnswer> a = solve_chain(f.candidates, *f.model, s, chain, options, budget);
    ASSERT_TRUE(a) << what << ": no answer within " << budget;
    const std::vector<char> saved = f.whole(s, a->saved);
    EXPECT_EQ(f.model->peak(saved), a->peak) << what << " at " << budget;
    EXPECT_LE(a->peak, budget) << what;
    EXPECT_DOUBLE_EQ(f.cost_of(saved), a->cost) << what << " at " << budget;
    EXPECT_DOUBLE_EQ(a->cost, least) << what << ": the least any answer within " << budget << " costs";
  }
  // Below the smallest peak nothing fits; without a budget, the smallest peak.
  EXPECT_FALSE(solve_chain(f.candidates, *f.model, s, chain, options, brute.begin()->first - 1)) << what;
  const std::optional<ChainAnswer> least = solve_chain(f.candidates, *f.model, s, chain, options, std::nullopt);
  ASSERT_TRUE(least) << what;
  EXPECT_EQ(least->peak, brute.begin()->first) << what;
}

TEST(ChainDynamicProgram, FindsTheLayersOfAUniformChain) {
  const Fixture f(sin_chain(6));
  ASSERT_EQ(f.segments.size(), 1u);
  const std::optional<Chain> chain = find_chain(f.candidates, f.segments[0]);
  ASSERT_TRUE(chain);
  EXPECT_EQ(chain->layers.size(), 6u);
  // Each sin layer: its output and its JVP's cos; the next layer reads the output.
  ASSERT_EQ(chain->layers[0].size(), 2u);
  ASSERT_EQ(chain->exports.size(), 1u);
  EXPECT_EQ(f.candidates[static_cast<size_t>(chain->layers[2][static_cast<size_t>(chain->exports[0])])].primitive, "sin");
  EXPECT_TRUE(chain->last_exports.empty());  // the chain's output leaves the checkpoint
  // Not a chain: two layers.
  const Fixture two(sin_chain(2));
  EXPECT_FALSE(find_chain(two.candidates, two.segments[0]));
}

TEST(ChainDynamicProgram, EqualsEveryAnswerTriedOnShortChains) {
  for (int layers = 3; layers <= 7; ++layers) {
    const Fixture f(sin_chain(layers));
    const std::optional<Chain> chain = find_chain(f.candidates, f.segments[0]);
    ASSERT_TRUE(chain) << layers;
    ChainOptions options;
    options.unit_cost = f.cost;
    expect_chain_matches(f, *chain, options, least_cost_by_peak(f, every_answer(f)), "sin chain of " + std::to_string(layers));
  }
  for (int layers = 3; layers <= 5; ++layers) {
    const Fixture f(tanh_chain(layers), true);
    const std::optional<Chain> chain = find_chain(f.candidates, f.segments[0]);
    ASSERT_TRUE(chain) << layers;
    ChainOptions options;
    options.unit_cost = f.cost;
    expect_chain_matches(f, *chain, options, least_cost_by_peak(f, every_answer(f)),
                         "dense tanh chain of " + std::to_string(layers));
  }
}

TEST(ChainDynamicProgram, EqualsEveryChoiceOfKeptLayersUpToSixteen) {
  // The answers that keep some layers' outputs and recompute everything else: the runs of
  // Revolve's one-recomputation schedule. The program searches them with one pattern, "keep
  // nothing but the run's top output".
  for (int layers : {3, 5, 8, 12, 16}) {
    const Fixture f(sin_chain(layers));
    const std::optional<Chain> chain = find_chain(f.candidates, f.segments[0]);
    ASSERT_TRUE(chain) << layers;
    std::vector<std::vector<char>> answers;
    const size_t n = chain->layers.size();
    for (uint32_t bits = 0; bits < (1u << (n - 1)); ++bits) {
      std::vector<char> a(f.candidates.size(), 0);
      for (size_t l = 0; l + 1 < n; ++l)
        if ((bits >> l) & 1)
          for (int x : chain->exports) a[static_cast<size_t>(chain->layers[l][static_cast<size_t>(x)])] = 1;
      answers.push_back(std::move(a));
    }
    ChainOptions options;
    options.unit_cost = f.cost;
    options.enumerate = false;
    options.patterns = {std::vector<char>(chain->layers[0].size(), 0)};
    options.longest_run = static_cast<int>(n);
    expect_chain_matches(f, *chain, options, least_cost_by_peak(f, answers), "kept layers of " + std::to_string(layers));
  }
}

TEST(SegmentDynamicProgram, EqualsEveryAnswerTriedOnPerLayerCheckpoints) {
  const Fixture f(per_layer_checkpoints());
  ASSERT_EQ(f.segments.size(), 3u);
  // Every answer of every segment as its options.
  std::vector<std::vector<SegmentOption>> options;
  for (const Segment& s : f.segments) {
    options.emplace_back();
    for (uint32_t bits = 0; bits < (1u << s.members.size()); ++bits) {
      std::vector<char> saved(s.members.size());
      for (size_t k = 0; k < saved.size(); ++k) saved[k] = (bits >> k) & 1;
      options.back().push_back(option_of(f.candidates, s, saved, f.cost));
    }
    keep_undominated(options.back());
  }
  const std::map<int64_t, double> brute = least_cost_by_peak(f, every_answer(f));
  ASSERT_GT(brute.size(), 3u);
  for (const auto& [budget, least] : brute) {
    const std::optional<SegmentChoice> choice = cheapest_within(*f.model, f.segments, options, budget);
    ASSERT_TRUE(choice) << budget;
    std::vector<char> saved(f.candidates.size(), 1);
    for (size_t g = 0; g < f.segments.size(); ++g) {
      const SegmentOption& o = options[g][static_cast<size_t>(choice->option[g])];
      for (size_t k = 0; k < o.saved.size(); ++k) saved[static_cast<size_t>(f.segments[g].members[k])] = o.saved[k];
    }
    EXPECT_EQ(f.model->peak(saved), choice->peak) << budget;
    EXPECT_LE(choice->peak, budget);
    EXPECT_DOUBLE_EQ(f.cost_of(saved), least) << "the least any answer within " << budget << " costs";
  }
  EXPECT_FALSE(cheapest_within(*f.model, f.segments, options, brute.begin()->first - 1));
  EXPECT_EQ(smallest_peak(*f.model, f.segments, options).peak, brute.begin()->first);
}

}  // namespace
}  // namespace rematkit::solver
