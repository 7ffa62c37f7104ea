// Shared test helpers: the reference residual cases, the test-only policies they need, random
// inputs and the finite-difference oracle.
#pragma once
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <memory>

#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/io/program_file.hpp"
#include "rematkit/autodiff/gradient_result.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit::testing {

// tests/data: everything the tests read (data/README.md says where it came from).
std::string data_dir();
std::string read_text(const std::string& path);
// How often `needle` occurs in `text`, overlaps included.
size_t count_of(const std::string& text, const std::string& needle);

struct ResidualCase {
  std::string name;
  std::string program_path;
  std::vector<std::string> expected;  // report lines without " from FILE:LINE"
};
std::vector<ResidualCase> residual_cases();
inline void PrintTo(const ResidualCase& c, std::ostream* os) { *os << c.name; }

// The policies of the plugins found by default discovery (JAX's, the combinators) plus the custom
// ones residual cases need, from tests/plugins/custom_policies.c built as an out-of-tree plugin:
// save_cos_only (saveable iff the primitive is cos) and save_mul_only ('mul' in its name).
const PolicyRegistry& test_policies();
std::string temp_dir();

Linearization linearize_with(const Program& program, const std::string& whole_program_policy = "");

// One run of a linearization on backends, as a Plan's forward() and gradient() run it (a
// OneShotRunner): the outputs alone, or the outputs and the gradient of sum(output_i *
// cotangent_i) (cotangents default to ones).
std::vector<Tensor> run_forward(const Linearization& lin, const std::vector<Tensor>& constants,
                                const std::vector<Tensor>& arguments, const BackendOptions& backends);
GradientResult run_gradient(const Linearization& lin, const std::vector<Tensor>& constants,
                            const std::vector<Tensor>& arguments, const BackendOptions& backends,
                            const std::vector<Tensor>* cotangents = nullptr);

// Whether the default plugins hold a backend of this name (an AUTO part may not be built).
bool backend_installed(const std::string& name);
// The first equation of the program `text` prepared alone on Highway (one backend instance for
// the test binary), or null where Highway declines it.
std::unique_ptr<PreparedKernel> first_equation_on_highway(const std::string& text);

// The backend each kernel step of lin's forward pass runs on under `options`, in order.
std::vector<std::string> forward_step_backends(const Linearization& lin, const BackendOptions& options);

// GoogleTest failures where an output's type differs from the expected one's, or an element is
// further from it than `relative` times the largest |value| of that expected output (at least 1).
void expect_outputs_near(const std::vector<Tensor>& got, const std::vector<Tensor>& expected, double relative);

// Random inputs for a program's constants and arguments, uniform in [lo, hi] with a random sign
// when `signed_values`.
struct RandomInputs {
  std::vector<Tensor> constants, arguments;
};
RandomInputs random_inputs(const Program& program, unsigned seed, double lo = 0.3, double hi = 1.2,
                           bool signed_values = true);

// The message of the bad-input Error `call` throws ("" if it throws none or another kind).
template <typename Call>
std::string usage_error(Call call) {
  try {
    call();
  } catch (const Error& e) {
    return e.kind() == ErrorKind::kBadInput ? e.what() : "internal: " + std::string(e.what());
  }
  return "";
}

// d sum(outputs) / d argument, by central differences on the f64 interpreter.
std::vector<Tensor> finite_difference_gradients(const Program& program, const RandomInputs& inputs, double h = 1e-5);

// Expects the f64 gradient of `program`'s loss at `arguments` (the exact interpreter's reverse mode)
// to match central differences for every argument in `checked`: within 1e-6 + 1e-5 |fd|.
void expect_gradient_matches_finite_differences(const Program& program, const std::vector<Tensor>& arguments,
                                                const std::vector<size_t>& checked);

// The names of every primitive in `program` and in the programs its equations call.
std::set<std::string> primitives_of(const Program& program);

// A program in jaxpr text evaluated on `args` by the exact f64 interpreter.
std::vector<Tensor> evaluate_f64(const std::string& text, std::vector<Tensor> args);
// A tensor of `dtype` (f32 by default) with these row-major values.
Tensor tensor_of(Shape shape, std::vector<double> data, DType dtype = DType::kF32);

}  // namespace rematkit::testing
