// What several linearizations of one program (one per policy) keep for the backward pass, side by
// side: a row for every value any of them keeps, and what each does with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/autodiff/linearize.hpp"

namespace rematkit::cli {

enum class KeptAs {
  kKept,        // a residual in device memory
  kOffloaded,   // a residual copied to pinned host memory
  kRecomputed,  // computed again by the backward pass
  kNotRead,     // neither: the backward pass does not read it (or it is not computed at all)
};
const char* kept_as_name(KeptAs as);  // "kept", "offloaded", "recomputed", "not_read"

struct KeptCell {
  KeptAs as = KeptAs::kNotRead;
  int64_t bytes = 0;  // as kept, for kKept and kOffloaded
};

struct KeptValueRow {
  std::string type;    // the value's type in device memory, "f32[4]"
  std::string origin;  // as print_saved_residuals says it, without the place: "output of sin"; "#2"
                       // added where rows would otherwise read the same
  int line = 0;        // the program line of the equation that computes it; 0 for inputs
  std::vector<KeptCell> cells;  // one per linearization, in order
};

// A row per value that any of `lins` keeps, in print_saved_residuals order (constants, arguments,
// then equation outputs in program order). A value is the same across linearizations when it is
// the same argument or constant, or the same output of an equation with the same primitive and
// JVP role at the same place in the program (the n-th such, where a rule emits several there):
// policies change what is kept, not the flat graph's equations, but a loop's parts carry their
// residuals as extra outputs, which then match only where they are the same.
std::vector<KeptValueRow> kept_value_rows(const std::vector<const Linearization*>& lins);

}  // namespace rematkit::cli
