// How long a real-size model's params take to draw as Flax's init draws them (jax.random.normal
// through XLA's erf_inv): GPT-2 small and the 100M Llama built with their values and without, and
// jax.random.normal alone on as many elements. Not Google Benchmark: a few seconds a round, so the
// median of a few rounds per thread count. Each model's line also gives a hash of its params' bits,
// which a faster drawing must leave unchanged.
// Usage: rematkit_param_drawing_bench [ROUNDS (default 5)] [THREADS... (default 1 2)]
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/llama.hpp"
#include "rematkit/random/samplers.hpp"

namespace {

using namespace rematkit;

double seconds_of(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// FNV-1a over the params' values, each as its double's 64 bits.
uint64_t params_hash(const Model& m) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i : m.params) {
    for (double v : m.arguments[i].data) {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      for (int b = 0; b < 64; b += 8) h = (h ^ ((bits >> b) & 0xff)) * 1099511628211ull;
    }
  }
  return h;
}

uint64_t params_count(const Model& m) {
  uint64_t n = 0;
  for (size_t i : m.params) n += static_cast<uint64_t>(m.program.vars[static_cast<size_t>(m.program.invars[i])].type.num_elements());
  return n;
}

// One model: its build with values and without, and normal() on its param count, `rounds` times.
void time_model(const std::string& label, const std::function<Model(ModelValues)>& build, int rounds, int threads) {
  const Model shape_only = build(ModelValues::kNone);
  const uint64_t n = params_count(shape_only);
  uint64_t hash = 0;
  std::vector<double> drawn, none, sampler;
  for (int r = 0; r < rounds; ++r) {
    Model m;
    drawn.push_back(seconds_of([&] { m = build(ModelValues::kDrawn); }));  // freed outside the timing
    if (r == 0) hash = params_hash(m);
    m = Model{};
    none.push_back(seconds_of([&] { m = build(ModelValues::kNone); }));
    std::vector<float> values;
    sampler.push_back(seconds_of([&] { values = random::normal(random::prng_key(0), n, random::PrngMode::kPartitionable); }));
  }
  std::printf("%-12s threads %d  params %llu  built with values %.3f s  without %.3f s  normal() alone %.3f s  "
              "params hash %016llx\n",
              label.c_str(), threads, static_cast<unsigned long long>(n), median(drawn), median(none), median(sampler),
              static_cast<unsigned long long>(hash));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 5;
  std::vector<int> thread_counts;
  for (int i = 2; i < argc; ++i) thread_counts.push_back(std::stoi(argv[i]));
  if (thread_counts.empty()) thread_counts = {1, 2};
  // GPT-2 small (12,1,128,768,12,50257) and the 100M Llama (8,1,128,768,12,4,32000), as
  // bench/step_workloads.hpp's gpt and llama specs write them.
  GptConfig gpt;
  gpt.layers = 12, gpt.batch = 1, gpt.sequence = 128, gpt.model = 768, gpt.heads = 12, gpt.vocab = 50257, gpt.mlp = 3072;
  LlamaConfig llama;
  llama.layers = 8, llama.batch = 1, llama.sequence = 128, llama.model = 768, llama.heads = 12, llama.kv_heads = 4;
  llama.vocab = 32000, llama.mlp = 2048;
  for (int threads : thread_counts) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
    time_model("gpt2-small", [&](ModelValues v) { return build_gpt(gpt, "nothing_saveable", 0, v); }, rounds, threads);
    time_model("llama-100m", [&](ModelValues v) { return build_llama(llama, "nothing_saveable", 0, v); }, rounds, threads);
  }
  return 0;
}
