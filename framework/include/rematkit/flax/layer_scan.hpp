// Identical layers traced as Flax's nn.scan and nn.remat_scan trace them, for models built with
// ProgramBuilder (build_transformer, build_gpt, build_llama): one scan equation per level, the
// layers' params stacked as the scan's xs.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/flax/remat_placement.hpp"
#include "rematkit/ir/program_builder.hpp"

namespace rematkit {

// One layer traced into `b` on x with its own params (slices of the stacked ones); gives the new x.
using LayerFn = std::function<Atom(ProgramBuilder& b, Atom x, const std::vector<Atom>& params)>;

// `fn` traced into a checkpoint (jax.checkpoint with `policy`) whose operands are x and `params`.
REMATKIT_FLAX_EXPORT Atom checkpoint_over(ProgramBuilder& b, Atom x, const std::vector<Atom>& params,
                                          const std::string& policy, bool prevent_cse, const LayerFn& fn);

// The layers applied in turn to x, the carry, with their params `stacked` [lengths..., ...] in layer
// order: lax.scan over lengths[0] whose body, with more lengths, is a checkpoint with `policy`
// around the scans over the rest (flax/core/lift.py: remat_scan, prevent_cse=False), and with one,
// the layer itself, inside a checkpoint with `policy` when `checkpoint_each_layer` (nn.scan(nn.remat(...))).
// With `rng` (a key), each scan splits it into one key per iteration, scanned as its last xs, as
// nn.scan's split_rngs={'dropout': True} does (flax/core/lift.py: scan splits each such rng
// `length` ways); the layer gets its key as the last of its params.
REMATKIT_FLAX_EXPORT Atom scan_layers(ProgramBuilder& b, Atom x, const std::vector<Atom>& stacked,
                                      const std::vector<int64_t>& lengths, const std::string& policy,
                                      bool checkpoint_each_layer, const LayerFn& layer, std::optional<Atom> rng = std::nullopt);

// A model's scanned layers: with one length, nn.scan with `remat` placing its checkpoints (inside
// the body for kPerLayer, around the scan, a checkpoint with prevent_cse, for kWhole); with
// several, nn.remat_scan, whose checkpoints replace `remat`'s. `rng` as scan_layers takes it.
REMATKIT_FLAX_EXPORT Atom scan_with_remat(ProgramBuilder& b, Atom x, const std::vector<Atom>& stacked,
                                          const std::vector<int64_t>& lengths, const std::string& policy,
                                          RematPlacement remat, const LayerFn& layer, std::optional<Atom> rng = std::nullopt);

}  // namespace rematkit
