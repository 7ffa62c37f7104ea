// A sweep run from Python: the interpreter keeps answering Ctrl-C while the C++ sweep works.
#pragma once
#include <string>

#include "rematkit/sweep/sweep_config.hpp"

namespace rematkit::python {

struct SweepAnswer {
  std::string rows_json;    // sweep_output's JSON rows (format_json)
  bool interrupted = false;  // Ctrl-C: the groups that finished are in rows_json
};

// Runs `config` on a thread of its own while the calling thread, without the GIL, checks for
// signals every 100 ms; a KeyboardInterrupt (or any pending Python exception from a signal handler)
// stops the sweep after the group in progress, and is cleared: the caller raises it with the rows.
SweepAnswer run_sweep_interruptibly(const sweep::SweepConfig& config);

}  // namespace rematkit::python
