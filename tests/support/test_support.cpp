#include "support/test_support.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include <gtest/gtest.h>

#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::testing {

std::string data_dir() { return REMATKIT_TEST_DATA_DIR; }

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<ResidualCase> residual_cases() {
  std::vector<ResidualCase> cases;
  const std::filesystem::path dir = data_dir() + "/residual-cases";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jaxpr") continue;
    ResidualCase c;
    c.name = entry.path().stem().string();
    c.program_path = entry.path().string();
    std::istringstream expected(read_text((dir / (c.name + ".expected")).string()));
    for (std::string line; std::getline(expected, line);)
      if (!line.empty()) c.expected.push_back(line);
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return cases;
}

std::string temp_dir() {
  // One folder per test process, removed when the process ends.
  struct Folder {
    std::string path;
    Folder() {
      std::string templ = (std::filesystem::temp_directory_path() / "rematkit-test-XXXXXX").string();
      if (!mkdtemp(templ.data())) throw std::runtime_error("cannot make a temporary folder");
      path = templ;
    }
    ~Folder() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Folder folder;
  return folder.path;
}

const PolicyRegistry& test_policies() {
  static const PluginRegistry registry = [] {
    PluginRegistry r;
    r.discover({REMATKIT_TEST_POLICIES_PLUGIN});
    return r;
  }();
  return registry.policies();
}

bool backend_installed(const std::string& name) {
  const std::vector<std::string> names = default_plugins().backend_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::unique_ptr<PreparedKernel> first_equation_on_highway(const std::string& text) {
  static BackendInstance highway(default_plugins(), "highway");
  const Program program = parse_program(text, "equation");
  const Equation& e = program.eqns.at(0);
  std::vector<Type> in;
  for (const Atom& a : e.inputs) in.push_back(program.type_of(a));
  return highway.prepare(e.prim, e.params, in, {program.vars[static_cast<size_t>(e.outputs.at(0))].type}, "equation");
}

std::vector<std::string> forward_step_backends(const Linearization& lin, const BackendOptions& options) {
  const StepProgram forward = build_step_program(lin, options, Pass::kForward, InputMode::kLoadedEachRun);
  std::vector<std::string> backends;
  for (const Step& step : forward.steps())
    if (step.kind == StepKind::kKernel) backends.push_back(step.kernel->backend());
  return backends;
}

void expect_outputs_near(const std::vector<Tensor>& got, const std::vector<Tensor>& expected, double relative) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t o = 0; o < got.size(); ++o) {
    SCOPED_TRACE("output " + std::to_string(o));
    ASSERT_EQ(got[o].type, expected[o].type);
    double scale = 1;
    for (double v : expected[o].data) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < got[o].data.size(); ++i) EXPECT_NEAR(got[o].data[i], expected[o].data[i], relative * scale) << i;
  }
}

Linearization linearize_with(const Program& program, const std::string& whole_program_policy) {
  LinearizeOptions options;
  options.policies = &test_policies();
  options.policy = whole_program_policy;
  return linearize(program, options);
}

RandomInputs random_inputs(const Program& program, unsigned seed, double lo, double hi, bool signed_values) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> magnitude(lo, hi);
  std::bernoulli_distribution sign(0.5);
  auto make = [&](int var) {
    const Type& t = program.vars[var].type;
    Tensor tensor = Tensor::filled(t, 0.0);
    for (std::vector<double>* part : {&tensor.data, &tensor.imag})  // imag: a complex tensor's
      for (double& v : *part) {
        double x = magnitude(rng) * (signed_values && sign(rng) ? -1.0 : 1.0);
        v = round_to_dtype(is_inexact(t.dtype) ? x : std::round(x * 3), t.dtype, Arithmetic::kFloat32);
      }
    return tensor;
  };
  RandomInputs in;
  for (int v : program.constvars) in.constants.push_back(make(v));
  for (int v : program.invars) in.arguments.push_back(make(v));
  return in;
}

std::vector<Tensor> finite_difference_gradients(const Program& program, const RandomInputs& inputs, double h) {
  auto loss = [&](const std::vector<Tensor>& args) {
    double total = 0;
    for (const Tensor& out : evaluate_program(program, inputs.constants, args, Arithmetic::kFloat64))
      if (is_floating(out.type.dtype))
        for (double v : out.data) total += v;
    return total;
  };
  std::vector<Tensor> grads;
  for (size_t a = 0; a < inputs.arguments.size(); ++a) {
    Tensor g = Tensor::filled(inputs.arguments[a].type, 0.0);
    // A complex argument x + iy gets JAX's gradient, df/dx - i df/dy (jax.grad's convention).
    for (auto [part, sign] : {std::pair{&Tensor::data, 1.0}, std::pair{&Tensor::imag, -1.0}}) {
      if (!is_inexact(g.type.dtype)) break;
      for (size_t i = 0; i < (g.*part).size(); ++i) {
        std::vector<Tensor> plus = inputs.arguments, minus = inputs.arguments;
        (plus[a].*part)[i] += h;
        (minus[a].*part)[i] -= h;
        (g.*part)[i] = sign * (loss(plus) - loss(minus)) / (2 * h);
      }
    }
    grads.push_back(std::move(g));
  }
  return grads;
}

std::vector<Tensor> evaluate_f64(const std::string& text, std::vector<Tensor> args) {
  return evaluate_program(parse_program(text, "test"), {}, args, Arithmetic::kFloat64);
}

Tensor tensor_of(Shape shape, std::vector<double> data, DType dtype) {
  return Tensor{Type{dtype, std::move(shape), MemorySpace::kDevice}, std::move(data)};
}

void expect_gradient_matches_finite_differences(const Program& program, const std::vector<Tensor>& arguments,
                                                const std::vector<size_t>& checked) {
  const GradientResult ad = interpret_gradient(linearize_with(program), {}, arguments, Arithmetic::kFloat64);
  const std::vector<Tensor> fd = finite_difference_gradients(program, RandomInputs{{}, arguments}, 1e-6);
  for (size_t p : checked) {
    ASSERT_TRUE(ad.gradients[p].has_value()) << "argument " << p;
    for (size_t i = 0; i < fd[p].data.size(); ++i)
      EXPECT_NEAR(ad.gradients[p]->data[i], fd[p].data[i], 1e-6 + 1e-5 * std::fabs(fd[p].data[i]))
          << "argument " << p << " element " << i;
    ASSERT_EQ(ad.gradients[p]->imag.size(), fd[p].imag.size()) << "argument " << p;
    for (size_t i = 0; i < fd[p].imag.size(); ++i)
      EXPECT_NEAR(ad.gradients[p]->imag[i], fd[p].imag[i], 1e-6 + 1e-5 * std::fabs(fd[p].imag[i]))
          << "argument " << p << " element " << i << " (imaginary part)";
  }
}

std::set<std::string> primitives_of(const Program& program) {
  std::set<std::string> seen;
  for (const Equation& e : program.eqns) {
    seen.insert(std::string(prim_name(e.prim)));
    if (const Program* body = e.body())
      for (const std::string& inner : primitives_of(*body)) seen.insert(inner);
  }
  return seen;
}

std::vector<Tensor> run_forward(const Linearization& lin, const std::vector<Tensor>& constants,
                                const std::vector<Tensor>& arguments, const BackendOptions& backends) {
  return OneShotRunner(lin, backends, Pass::kForward).run(constants, arguments).outputs;
}

GradientResult run_gradient(const Linearization& lin, const std::vector<Tensor>& constants,
                            const std::vector<Tensor>& arguments, const BackendOptions& backends,
                            const std::vector<Tensor>* cotangents) {
  return OneShotRunner(lin, backends).run(constants, arguments, cotangents);
}

}  // namespace rematkit::testing
