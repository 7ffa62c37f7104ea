// The fuser's own parts (fusion_steps.hpp says what a fusion is): one pass's equations with who
// reads and defines each value, and the three steps fuse_pass takes for each fusion: finding the
// equations of a chain (fusion_finding.cpp), encoding them as one rk_fusion equation
// (fusion_encoding.cpp), and binding that to a backend (fusion_binding.cpp).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <vector>

#include "fusion_steps.hpp"
#include "rematkit/ir/params.hpp"

namespace rematkit::fusion {

// Parts in one fused equation at most, and how far ahead of its first part a fusion looks: a
// Dense layer with its activation and mask is 4 parts, a gelu about 10.
constexpr size_t kMaxParts = 16;
constexpr size_t kLookahead = 64;

// In the per-position table of fuse_pass: an equation that is part of no fused step.
constexpr int kOnItsOwn = -1;

// The pass's equations by position (0 .. eqns.size() - 1), and who reads and defines each value.
struct PassView {
  PassView(const Linearization& lin, const std::vector<int>& eqns, Pass pass, const std::vector<ValueId>& readout);
  const FlatEquation& eqn_at(size_t p) const { return graph.eqns[static_cast<size_t>(eqns[p])]; }

  const FlatGraph& graph;
  const std::vector<int>& eqns;
  std::map<ValueId, std::vector<size_t>> readers;  // value -> positions in the pass that read it
  std::map<ValueId, size_t> defined_at;            // value -> the position in the pass that defines it
  std::set<ValueId> unfusable;                     // defined twice in the pass: left alone
  std::set<ValueId> escapes;                       // read after the pass: the readout, forward residuals
};

// What may seed or join a fusion.
bool elementwise(const FlatEquation& e);
bool product(const FlatEquation& e);

// How a fusion grows: each part reading what the fusion reads or computes (a chain), or also
// taking the equations that compute a part's other operands (a tree: two terms and their sum).
enum class Growth { kChain, kTree };

// The parts a fusion seeded at position `first` may have, in pass order; `taken` holds per
// position the fused step it is already part of, kOnItsOwn, or another negative mark (an equation
// held apart: never a part).
std::vector<size_t> find_chain(const PassView& pass, size_t first, const std::vector<int>& taken, Growth growth);

// A product at position `first` with the transpose that alone reads its result; empty where there
// is none.
std::vector<size_t> find_product_transpose(const PassView& pass, size_t first, const std::vector<int>& taken);

// A scatter-add into a spread scalar at position `scatter`, with that spread and the add that alone
// reads it (a tied embedding's cotangents summed), in pass order; empty where it is not one.
std::vector<size_t> find_scatter_sum(const PassView& pass, size_t scatter, const std::vector<int>& taken);

// Fills the step's equations, operands and results; returns the rk_fusion equation's params.
Params encode(const PassView& pass, const std::vector<size_t>& parts, FusedStep& step);

// Prepares the fused equation on the backend the preference list allows (fusion_steps.hpp) into
// step.kernel, once per fusion however often it is asked; false where none may or none does.
bool bind_to_backend(const PassView& pass, const std::vector<size_t>& parts, const Params& params, FusedStep& step,
                     PreparedKernels& kernels);

}  // namespace rematkit::fusion
