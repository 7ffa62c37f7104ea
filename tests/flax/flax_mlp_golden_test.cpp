// nn_remat_policy against reference/golden/flax_mlp.json: outputs within the file's tolerance,
// kernel keys exactly and kernels bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "rematkit/flax/nn_remat_policy.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

struct GoldenCase {
  nlohmann::json json;
  std::string name;
};

std::vector<GoldenCase> golden_cases(bool only_with_params = false) {
  std::ifstream in(data_dir() + "/golden/flax_mlp.json");
  const nlohmann::json root = nlohmann::json::parse(in);
  std::vector<GoldenCase> cases;
  for (const auto& c : root.at("cases")) {
    if (only_with_params && !c.contains("params")) continue;
    cases.push_back({c, "seed" + std::to_string(c.at("seed").get<uint64_t>()) + "_F" +
                            std::to_string(c.at("features").get<int>()) + "_D" + std::to_string(c.at("x").size()) +
                            "_" + c.at("prng").get<std::string>()});
  }
  return cases;
}

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

flax::NnRematPolicyOptions options_for(const nlohmann::json& c) {
  flax::NnRematPolicyOptions options;
  options.prng = c.at("prng") == "legacy" ? random::PrngMode::kLegacy : random::PrngMode::kPartitionable;
  return options;
}

class FlaxGoldenTest : public ::testing::TestWithParam<GoldenCase> {};
class FlaxGoldenParamsTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(FlaxGoldenTest, OutputWithinTolerance) {
  const nlohmann::json& c = GetParam().json;
  const std::vector<float> x = c.at("x").get<std::vector<float>>();
  const std::vector<double> expected = c.at("output").get<std::vector<double>>();
  const std::vector<float> out = flax::nn_remat_policy(c.at("seed").get<double>(), x, c.at("features").get<double>(),
                                                       options_for(c));
  ASSERT_EQ(out.size(), expected.size());
  double max_abs = 0;
  for (double e : expected) max_abs = std::max(max_abs, std::fabs(e));
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out[i], expected[i], 2e-5 * std::fabs(expected[i]) + 1e-6 * max_abs) << "output " << i;
}

TEST_P(FlaxGoldenParamsTest, KernelsAndKeysExact) {
  const nlohmann::json& c = GetParam().json;
  const std::vector<float> x = c.at("x").get<std::vector<float>>();
  const flax::NnRematPolicyOptions options = options_for(c);
  const auto setup = flax::check_nn_remat_policy_inputs(c.at("seed").get<double>(), x, c.at("features").get<double>(),
                                                        options);
  const flax::InitializedModule module = flax::init_remat_mlp(setup, static_cast<int64_t>(x.size()), options);
  int checked = 0;
  for (const flax::Variable& v : module.params) {
    const nlohmann::json& layer = c.at("params").at(v.path.at(0));
    if (v.path.at(1) == "kernel") {
      EXPECT_EQ(v.key, (random::Key{layer.at("kernel_key")[0].get<uint32_t>(), layer.at("kernel_key")[1].get<uint32_t>()}))
          << v.path[0];
      std::vector<float> expected;
      for (const auto& row : layer.at("kernel"))
        for (const auto& value : row) expected.push_back(value.get<float>());
      EXPECT_EQ(v.value, expected) << v.path[0] << " kernel, bit for bit";
    } else {
      EXPECT_EQ(v.value, layer.at("bias").get<std::vector<float>>());
    }
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST_P(FlaxGoldenTest, EveryBackendWithinTolerance) {
  const nlohmann::json& c = GetParam().json;
  const std::vector<float> x = c.at("x").get<std::vector<float>>();
  const std::vector<double> expected = c.at("output").get<std::vector<double>>();
  double max_abs = 0;
  for (double e : expected) max_abs = std::max(max_abs, std::fabs(e));
  for (const std::string& backend : default_plugins().backend_names()) {
    SCOPED_TRACE(backend);
    flax::NnRematPolicyOptions options = options_for(c);
    options.backends.preference = {backend, "reference"};  // what a backend declines runs on the reference
    const std::vector<float> out =
        flax::nn_remat_policy(c.at("seed").get<double>(), x, c.at("features").get<double>(), options);
    ASSERT_EQ(out.size(), expected.size());
    for (size_t i = 0; i < out.size(); ++i)
      EXPECT_NEAR(out[i], expected[i], 2e-5 * std::fabs(expected[i]) + 1e-6 * max_abs) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, FlaxGoldenTest, ::testing::ValuesIn(golden_cases()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Golden, FlaxGoldenParamsTest, ::testing::ValuesIn(golden_cases(true)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace rematkit::testing
