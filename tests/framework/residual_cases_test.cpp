// Every case in tests/data/residual-cases reproduces JAX's print_saved_residuals lines,
// in order (the " from FILE:LINE" suffix aside).
#include <gtest/gtest.h>

#include <regex>

#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

class ResidualCaseTest : public ::testing::TestWithParam<ResidualCase> {};

std::string strip_source(const std::string& line) {
  static const std::regex suffix(R"( from [^ ]+:[0-9]+$)");
  return std::regex_replace(line, suffix, "");
}

TEST_P(ResidualCaseTest, ReportMatchesJax) {
  const ResidualCase& c = GetParam();
  const Program program = load_program(c.program_path);
  std::vector<std::string> lines;
  for (const std::string& line : residual_lines(linearize_with(program))) lines.push_back(strip_source(line));
  EXPECT_EQ(lines, c.expected);
}

TEST_P(ResidualCaseTest, EquationOutputsPointAtTheirLineInTheFile) {
  const ResidualCase& c = GetParam();
  const Program program = load_program(c.program_path);
  const std::vector<std::string> file_lines = [&] {
    std::vector<std::string> out;
    std::istringstream in(read_text(c.program_path));
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }();
  const Linearization lin = linearize_with(program);
  for (const std::string& line : residual_lines(lin)) {
    std::smatch m;
    static const std::regex re(R"((output of|named) '?([a-z_]+)'? from [^ ]+:([0-9]+)$)");
    if (!std::regex_search(line, m, re)) continue;
    const int at = std::stoi(m[3]);
    ASSERT_GE(at, 1);
    ASSERT_LE(at, static_cast<int>(file_lines.size()));
    // The line holds an equation (a binder followed by '='), not a comment.
    EXPECT_NE(file_lines[at - 1].find(" = "), std::string::npos) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, ResidualCaseTest, ::testing::ValuesIn(residual_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(ResidualCases, AllArePresent) { EXPECT_GE(residual_cases().size(), 34u); }

}  // namespace
}  // namespace rematkit::testing
