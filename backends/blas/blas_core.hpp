// Which kernels OpenBLAS runs, and whether they fit this CPU. Debian's OpenBLAS is built with
// DYNAMIC_ARCH: when it loads it picks a core type (a set of kernels) from the CPU's id, and 0.3.21
// does not know CPUs newer than it. On some (an Emerald Rapids Xeon) it falls back to its Prescott
// (SSE3) kernels, several times slower than its SkylakeX ones; on others it picks by the CPU's features
// (Cooperlake on a Zen 5). OPENBLAS_CORETYPE=SkylakeX (or Haswell, Zen, ...) in the environment
// chooses the kernels instead; OpenBLAS reads it when it loads, before any plugin runs, so it has
// to be set when the program starts.
#pragma once

#include <string>

namespace rematkit_blas {

// "Cooperlake", "SkylakeX", "Haswell", "Prescott", ...: OpenBLAS's name of the kernels it runs.
std::string core_name();

// The one line for the log that names the kernels and the library's build.
std::string core_report();

// A warning when the kernels do not fit this CPU: older than its instructions unasked (a CPU
// OpenBLAS does not recognise), newer than them (kernels the CPU cannot run), or other than the
// OPENBLAS_CORETYPE asked for (a name OpenBLAS does not know); empty when they fit.
std::string core_mismatch();

}  // namespace rematkit_blas
