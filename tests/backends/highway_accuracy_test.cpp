// The Highway backend's transcendentals, measured in ulp against correctly rounded double results,
// on every SIMD target this CPU supports (not only the one dispatch picks): libhwy's dispatch state
// is shared with the plugin, so restricting the targets here restricts them there.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <bit>
#include <cmath>
#include <functional>
#include <iostream>

#include "rematkit/random/xla_math.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

int64_t ordered(float f) {
  const int32_t bits = std::bit_cast<int32_t>(f);
  return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : bits;
}

struct Function {
  const char* primitive;
  double lo, hi;
  std::function<double(double)> exact;
  int64_t max_ulp;  // measured on this machine's targets, rounded up; see docs/backends.md
};

const Function kFunctions[] = {
    {"exp", -10, 10, [](double x) { return std::exp(x); }, 1},
    {"log", 1e-3, 1e3, [](double x) { return std::log(x); }, 4},
    {"sin", -10, 10, [](double x) { return std::sin(x); }, 3},
    {"cos", -10, 10, [](double x) { return std::cos(x); }, 3},
    {"tanh", -10, 10, [](double x) { return std::tanh(x); }, 5},  // past +-9, where XLA's clamps; 4 with FMA
    {"logistic", -10, 10, [](double x) { return 1 / (1 + std::exp(-x)); }, 3},
    {"erf", -5, 5, [](double x) { return std::erf(x); }, 4},
};

struct Measurement {
  int64_t max_ulp = 0;
  std::vector<double> outputs;
};

Measurement measure(const Function& f) {
  constexpr int64_t kN = 4099;  // not a multiple of any vector width: the tail path runs too
  const std::string text = std::string("{ lambda ; a:f32[") + std::to_string(kN) + "]. let b:f32[" + std::to_string(kN) +
                           "] = " + f.primitive + " a in (b,) }";
  const Program program = parse_program(text, f.primitive);
  Tensor x = Tensor::filled(Type{DType::kF32, {kN}, MemorySpace::kDevice}, 0);
  for (int64_t i = 0; i < kN; ++i) x.data[i] = static_cast<float>(f.lo + (f.hi - f.lo) * static_cast<double>(i) / (kN - 1));
  const Tensor y = run_forward(linearize_with(program), {}, {x}, BackendOptions{{"highway"}, &default_plugins()}).at(0);
  Measurement m{0, y.data};
  for (int64_t i = 0; i < kN; ++i) {
    const double exact = f.exact(x.data[i]);
    const float expected = static_cast<float>(exact);
    const float got = static_cast<float>(y.data[i]);
    // Near a zero crossing (sin, cos, tanh) ulps shrink without bound: there, an absolute 2^-24.
    if (std::fabs(exact) < 1e-3) {
      EXPECT_LE(std::fabs(got - exact), 6e-8) << f.primitive << " at " << x.data[i];
      continue;
    }
    m.max_ulp = std::max(m.max_ulp, std::abs(ordered(got) - ordered(expected)));
  }
  return m;
}

TEST(HighwayAccuracy, TranscendentalsOnEveryTarget) {
  if (!default_plugins().backend("highway")) GTEST_FAIL() << "the highway backend plugin was not found";
  std::vector<int64_t> targets;
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) targets.push_back(t);
  ASSERT_GE(targets.size(), 2u) << "expected the best target and at least one lower one";
  std::vector<std::vector<double>> outputs_per_target;
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    std::string measured;
    std::vector<double> all_outputs;
    for (const Function& f : kFunctions) {
      const Measurement m = measure(f);
      measured += std::string(" ") + f.primitive + "=" + std::to_string(m.max_ulp);
      EXPECT_LE(m.max_ulp, f.max_ulp) << f.primitive;
      all_outputs.insert(all_outputs.end(), m.outputs.begin(), m.outputs.end());
    }
    std::cout << "[ measured ] " << hwy::TargetName(target) << " max ulp:" << measured << "\n";
    outputs_per_target.push_back(std::move(all_outputs));
  }
  hwy::SetSupportedTargetsForTest(0);
  // erf is XLA:CPU's f32 rational approximation, so on a target with FMA (as XLA:CPU compiles it)
  // it gives XLA's bits: those of rematkit::flax's scalar xla_erf, which the PRNG tests pin.
  const Function& erf = kFunctions[std::size(kFunctions) - 1];
  hwy::SetSupportedTargetsForTest(targets.front());
  const Measurement best = measure(erf);
  hwy::SetSupportedTargetsForTest(0);
  for (size_t i = 0; i < best.outputs.size(); ++i) {
    const float x = static_cast<float>(erf.lo + (erf.hi - erf.lo) * static_cast<double>(i) / (best.outputs.size() - 1));
    ASSERT_EQ(static_cast<float>(best.outputs[i]), random::xla_erf(x)) << "at " << x;
  }
  // Targets with and without FMA round some results differently: identical bits everywhere would
  // mean the plugin's dispatch never left one target.
  bool some_differ = false;
  for (size_t t = 1; t < outputs_per_target.size(); ++t) some_differ |= outputs_per_target[t] != outputs_per_target[0];
  EXPECT_TRUE(some_differ) << "every target gave the same bits: did dispatch switch?";
}

}  // namespace
}  // namespace rematkit::testing
