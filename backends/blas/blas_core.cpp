// The core type OpenBLAS chose, against the instructions this CPU has.
#include "blas_core.hpp"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

namespace rematkit_blas {
namespace {

// The widest x86-64 vectors a set of OpenBLAS kernels uses, or this CPU runs.
enum class Isa { kSse = 0, kAvx = 1, kAvx2 = 2, kAvx512 = 3 };

// OpenBLAS 0.3.21's x86-64 core types (driver/others/dynamic.c) by the instructions their kernels
// need; every other one (Prescott, Core2, Nehalem, Opteron, Barcelona, ...) is SSE.
Isa isa_of_core(std::string_view core) {
  for (std::string_view name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core == name) return Isa::kAvx512;
  for (std::string_view name : {"Haswell", "Zen"})
    if (core == name) return Isa::kAvx2;
  for (std::string_view name : {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller", "Excavator"})
    if (core == name) return Isa::kAvx;
  return Isa::kSse;
}

Isa isa_of_cpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
  if (__builtin_cpu_supports("avx")) return Isa::kAvx;
  return Isa::kSse;
}

// The core type to ask for on a CPU with these instructions.
const char* core_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "SkylakeX";
    case Isa::kAvx2: return "Haswell";
    case Isa::kAvx: return "Sandybridge";
    case Isa::kSse: break;
  }
  return "Prescott";
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "AVX-512";
    case Isa::kAvx2: return "AVX2";
    case Isa::kAvx: return "AVX";
    case Isa::kSse: break;
  }
  return "SSE";
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string core_name() { return openblas_get_corename(); }

std::string core_report() {
  std::string config = openblas_get_config();
  while (!config.empty() && config.back() == ' ') config.pop_back();
  return "blas: OpenBLAS runs its " + core_name() + " kernels (" + config +
         "; OPENBLAS_CORETYPE=NAME at program start picks others)";
}

std::string core_mismatch() {
  const std::string core = core_name();
  const Isa have = isa_of_core(core), cpu = isa_of_cpu();
  const char* asked = std::getenv("OPENBLAS_CORETYPE");
  const bool chosen = asked && *asked;
  if (chosen && !same_name(asked, core))
    return "blas: OPENBLAS_CORETYPE=" + std::string(asked) + " was asked for but OpenBLAS runs its " + core +
           " kernels (a name it does not know, or kernels this CPU cannot run); for this " + isa_name(cpu) +
           " CPU: OPENBLAS_CORETYPE=" + core_for(cpu);
  if (have > cpu)
    return "blas: OpenBLAS runs its " + core + " kernels, which need " + isa_name(have) + ", on a CPU with " + isa_name(cpu) +
           ": start the program with OPENBLAS_CORETYPE=" + core_for(cpu);
  // Older kernels that OPENBLAS_CORETYPE asked for are the user's choice; unasked, a fallback.
  if (have < cpu && !chosen)
    return "blas: OpenBLAS runs its " + core + " kernels (" + isa_name(have) + ") on this " + isa_name(cpu) +
           " CPU, which it does not recognise: start the program with OPENBLAS_CORETYPE=" + core_for(cpu) +
           " for products several times faster";
  return "";
}

}  // namespace rematkit_blas
