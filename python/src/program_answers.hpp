// What the Python package asks of a program, in plain C++ types the bindings turn into Python
// objects: residuals, memory, solve, grad and compare, each as the matching command computes it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rematkit/ir/program.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit::python {

// How to differentiate: jax.grad's argnums (names or indices) and another policy for every
// checkpoint the program has; both optional.
struct ProgramEdits {
  std::vector<std::string> wrt;
  std::string retarget_policy;
  std::string mesh;           // "data=2,fsdp=4": one device's bytes (empty: the program's mesh, if any)
  bool whole_arrays = false;  // whole arrays whatever the program's shardings (--global)
};

// On what: backends in order of preference (empty: the fastest installed), threads (0: every core).
struct RunOn {
  std::vector<std::string> backends;
  int threads = 0;
  std::optional<int64_t> max_memory;
  std::vector<std::string> backend_options;  // "BACKEND.NAME=VALUE" each (parse_backend_option)
};

struct ResidualRow {
  std::string dtype;  // "f32"
  std::vector<int64_t> shape;
  int64_t nbytes = 0;
  std::string source;        // "from the argument W1", "output of cos from FILE:LINE"
  std::string file;          // the equation's place, for equation outputs
  int line = 0, column = 0;  // 0: none (an argument, a constant, a literal)
  std::string memory_space;  // "device", "pinned_host"
  std::string why;           // the policy decision behind it
  std::string line_text;     // print_saved_residuals' line
};

std::vector<ResidualRow> residual_rows(const Program& program, const std::string& policy, const ProgramEdits& edits);

// `rematkit memory --json`'s object for one policy.
std::string memory_json(const Program& program, const std::string& policy, const ProgramEdits& edits, const RunOn& on);

struct SolveRequest {
  std::string budget;  // "64MiB", "0.3" or "min"
  std::string cost = "flops";
  bool for_jax = false;  // one decision per JAX signature, so that it exports as a JAX policy
  bool offload = false;
  bool structure = true;
  double time_limit_seconds = 8.0;
};

struct SolveAnswer {
  std::string summary;        // what `rematkit solve` prints
  std::string decisions_json;  // the --decisions file
  std::string jax_policy;      // the --export-jax file; empty unless for_jax (and, with offload, names say it)
  // JAX's names policy for the answer (names_policy_of): the names saved and offloaded, or why names
  // cannot say it (names_why_not non-empty).
  std::vector<std::string> names_saved, names_offloaded;
  std::string names_why_not;
  int64_t budget_bytes = 0, peak_bytes = 0, smallest_peak = 0, residual_bytes = 0;
  double recompute_flops = 0, cost = 0;
  std::string method;
  bool proven_optimal = false;
  bool whole_program = false;
  double seconds = 0;
  struct Equation {
    std::string site, primitive, signature, type, where, decision;
    bool read_by_backward = false;
    int64_t bytes = 0, iterations = 1;
    double cost = 0;
  };
  std::vector<Equation> equations;
};

SolveAnswer solve(const Program& program, const SolveRequest& request, const ProgramEdits& edits, const RunOn& on);

// The outputs and the gradients (nullopt where an argument gets none), in binder order.
struct GradAnswer {
  std::vector<Tensor> outputs;
  std::vector<std::optional<Tensor>> gradients;
};
GradAnswer grad(const Program& program, const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                const std::string& policy, const ProgramEdits& edits, const RunOn& on);

// One row per policy, each planned and run on the same drawn inputs (rematkit compare's).
struct CompareRow {
  std::string policy;
  int64_t residuals = 0, residual_bytes = 0, predicted_peak = 0, measured_peak = 0;
  int64_t forward_flops = 0, recompute_flops = 0, backward_flops = 0;
  double median_ms = 0;
  double max_grad_diff = 0;  // against the first policy's gradients
};
std::vector<CompareRow> compare(const Program& program, const std::vector<std::string>& policies, int repetitions,
                                const ProgramEdits& edits, const RunOn& on);

}  // namespace rematkit::python
