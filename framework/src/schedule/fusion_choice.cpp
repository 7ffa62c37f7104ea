#include "fusion_choice.hpp"

namespace rematkit {
namespace {

int64_t arena_total(const ArenaLayout& layout) {
  return layout.arena(MemorySpace::kDevice) + layout.arena(MemorySpace::kPinnedHost);
}

// The fused steps that keep the most bytes alive where `p` has the most: the one running at that
// step, and those whose operands live through it only to be read by them.
std::set<int> fused_at_the_peak(const StepProgram& p) {
  const ArenaLayout& layout = p.layout();
  const int steps = static_cast<int>(p.steps().size());
  const int peak_step = most_live_step(layout);
  std::set<int> blamed;
  for (int s = peak_step; s < steps; ++s) {
    const Step& step = p.steps()[static_cast<size_t>(s)];
    bool through = s == peak_step;
    for (int b : step.inputs)
      through = through || (b >= 0 && layout.buffers[static_cast<size_t>(b)].first_step <= peak_step &&
                            layout.buffers[static_cast<size_t>(b)].last_step == s);
    if (through) blamed.insert(step.fused.begin(), step.fused.end());
  }
  return blamed;
}

}  // namespace

StepProgram choose_fusion(const Linearization& lin, PreparedKernels& kernels, Pass last_pass, InputMode inputs) {
  auto plan = [&](const FusionChoice& choice) { return build_steps(lin, kernels, last_pass, inputs, choice); };
  // (The sweep's gpt-small under dots_with_no_batch_dims_saveable on highway,reference: fused
  // everywhere, its recompute raised the peak; with a few fusions held apart the rest fuse.)
  StepProgram fused = plan(FusionChoice{});
  if (fused.fused_steps() == 0) return fused;
  StepProgram unfused = plan(FusionChoice::none());
  const int64_t unfused_peak = arena_total(unfused.layout());
  if (arena_total(fused.layout()) <= unfused_peak) return fused;
  FusionChoice choice;
  for (int tries = 0; tries < 4; ++tries) {
    const size_t before = choice.held_apart.size();
    choice.held_apart.merge(fused_at_the_peak(fused));
    if (choice.held_apart.size() == before) break;
    fused = plan(choice);
    if (fused.fused_steps() == 0) break;
    if (arena_total(fused.layout()) <= unfused_peak) return fused;
  }
  if (last_pass == Pass::kBackward)
    for (const FusionChoice& one_pass : {FusionChoice{true, false, {}}, FusionChoice{false, true, {}}}) {
      StepProgram partly = plan(one_pass);
      if (partly.fused_steps() > 0 && arena_total(partly.layout()) <= unfused_peak) return partly;
    }
  return unfused;
}

}  // namespace rematkit
