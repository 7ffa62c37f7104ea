// The programs JAX printed in public sources (tests/data/real): each reads, gets a residual report
// and a gradient that agrees with finite differences in the exact f64 interpreter; the ones rematkit
// cannot read yet still report what they need.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/io/program_file.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> programs_in(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".jaxpr") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

const fs::path kReal = fs::path(REMATKIT_TEST_DATA_DIR) / "real";

// A program, with the argument types its "# arg-types: a:f32[3],..." line gives (an untyped one).
Program load_with_arg_types(const std::string& path) {
  const std::string text = read_text(path);
  const std::string marker = "# arg-types: ";
  const size_t at = text.find(marker);
  if (at == std::string::npos) return parse_program(text, path);
  const size_t from = at + marker.size();
  return parse_program(text, path, parse_arg_types(text.substr(from, text.find('\n', from) - from), path));
}

class RealProgramTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RealProgramTest, ReadsAndItsGradientMatchesFiniteDifferences) {
  const Program program = load_with_arg_types(GetParam());
  const Linearization lin = linearize_with(program);
  format_residual_report(lin, true);  // every residual has its origin and reason
  const RandomInputs in = random_inputs(program, 11);
  const GradientResult ad = interpret_gradient(lin, in.constants, in.arguments, Arithmetic::kFloat64);
  const std::vector<Tensor> fd = finite_difference_gradients(program, in);
  for (size_t a = 0; a < fd.size(); ++a) {
    if (!ad.gradients[a]) continue;  // integer and bool arguments
    for (size_t i = 0; i < fd[a].data.size(); ++i)
      EXPECT_NEAR(ad.gradients[a]->data[i], fd[a].data[i], 1e-5 * (1 + std::fabs(fd[a].data[i])))
          << "argument " << program.vars[program.invars[a]].name << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, RealProgramTest, ::testing::ValuesIn(programs_in(kReal)),
                         [](const auto& info) { return fs::path(info.param).stem().string(); });

// The printed forms of each JAX version, written from JAX's source (tests/data/jax-forms/README.md).
const fs::path kJaxForms = fs::path(REMATKIT_TEST_DATA_DIR) / "jax-forms";
INSTANTIATE_TEST_SUITE_P(JaxForms, RealProgramTest, ::testing::ValuesIn(programs_in(kJaxForms)),
                         [](const auto& info) { return fs::path(info.param).stem().string(); });

// Real models at their real size (a GPT-2 block on [32, 512, 32] activations, whose attention
// scores are 33.5M elements): too big for finite differences in the f64 interpreter within a unit
// test, so these are read, verified and differentiated, with a residual report whose every line
// names where its value comes from; their primitives' gradients are checked in the small programs.
class LargeRealProgramTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LargeRealProgramTest, ReadsAndDifferentiates) {
  const Linearization lin = linearize_with(load_program(GetParam()));
  EXPECT_FALSE(lin.residuals.empty());
  for (const std::string& line : residual_lines(lin)) EXPECT_NE(line.find(" from "), std::string::npos) << line;
}

INSTANTIATE_TEST_SUITE_P(Corpus, LargeRealProgramTest, ::testing::ValuesIn(programs_in(kReal / "large")),
                         [](const auto& info) { return fs::path(info.param).stem().string(); });

// Programs that run forward but have no gradient JAX could give: a while loop whose tangent the
// output needs (JAX's error, word for word), or no floating argument at all. Their forward pass on
// the step runner agrees with the interpreter.
class ForwardOnlyRealProgramTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ForwardOnlyRealProgramTest, RunsForwardAndItsGradientIsWhatJaxGives) {
  const std::string source = read_text(GetParam());
  const Program program = parse_program(source, GetParam());
  const RandomInputs in = random_inputs(program, 3);
  const std::vector<Tensor> expected = evaluate_program(program, in.constants, in.arguments, Arithmetic::kFloat32);
  LinearizeOptions forward_only;
  forward_only.differentiate_nothing = true;
  const Linearization lin = linearize(program, forward_only);
  const std::vector<Tensor> got = run_forward(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  ASSERT_EQ(got.size(), expected.size());
  for (size_t o = 0; o < got.size(); ++o) EXPECT_EQ(got[o].data, expected[o].data) << "output " << o;
  const std::string marker = "Reverse-mode differentiation does not work for lax.while_loop";
  std::string error;
  try {
    linearize(program, LinearizeOptions{});
  } catch (const Error& e) {
    error = e.what();
  }
  if (source.find("# rematkit: runs forward; its gradient fails as JAX's does: " + marker) != std::string::npos)
    EXPECT_NE(error.find(marker), std::string::npos) << error;
  else
    EXPECT_EQ(error, "") << "a program with nothing to differentiate differentiates cleanly";
}

INSTANTIATE_TEST_SUITE_P(Corpus, ForwardOnlyRealProgramTest, ::testing::ValuesIn(programs_in(kReal / "forward-only")),
                         [](const auto& info) { return fs::path(info.param).stem().string(); });

class UnsupportedRealProgramTest : public ::testing::TestWithParam<std::string> {};

TEST_P(UnsupportedRealProgramTest, CheckNamesWhatItNeeds) {
  const std::string source = read_text(GetParam());
  const std::string marker = "# rematkit: not yet: ";
  const size_t at = source.find(marker);
  ASSERT_NE(at, std::string::npos) << "no '" << marker << "' line";
  const std::string expected = source.substr(at + marker.size(), source.find('\n', at) - at - marker.size());
  std::string found;
  for (const std::string& problem : program_problems(source, GetParam())) found += problem + "\n";
  EXPECT_NE(found.find(expected), std::string::npos) << found;
}

INSTANTIATE_TEST_SUITE_P(Corpus, UnsupportedRealProgramTest, ::testing::ValuesIn(programs_in(kReal / "unsupported")),
                         [](const auto& info) { return fs::path(info.param).stem().string(); });

TEST(RealPrograms, TheCorpusIsThere) {
  EXPECT_GE(programs_in(kReal).size(), 20u);
  EXPECT_GE(programs_in(kReal / "unsupported").size(), 1u);  // xmap's; pmap's reads since issue 43
  EXPECT_GE(programs_in(kReal / "forward-only").size(), 2u);
  EXPECT_GE(programs_in(kJaxForms).size(), 4u);
}

}  // namespace
}  // namespace rematkit::testing
