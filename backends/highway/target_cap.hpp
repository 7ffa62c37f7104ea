// REMATKIT_HIGHWAY_MAX_TARGET: caps the SIMD target Highway's dispatch picks, as oneDNN's
// ONEDNN_MAX_CPU_ISA caps its kernels, so that one machine can measure and test the kernels another
// CPU runs (AVX2's on an AVX-512 machine). Process-wide: every Highway dispatch in the process,
// oneDNN's widened copies included, chooses below the cap on first use.
#pragma once
#include <optional>
#include <string>

namespace rematkit::hwy_backend {

// Caps the dispatch at the target named `name` (as Highway spells its targets: "AVX2", "AVX3",
// "EMU128", "SCALAR"; any case). Returns what is wrong when `name` is not a target this build has
// and this CPU runs, naming those it could be.
std::optional<std::string> cap_target(const std::string& name);

}  // namespace rematkit::hwy_backend
