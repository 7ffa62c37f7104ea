// The memory limit: a step over it is refused before its arena is allocated, with one line naming
// the peak and the limit; a step at the limit runs, and its measured peak is the predicted one.
#include "rematkit/runtime/memory_limit.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "rematkit/ir/byte_size.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

const char* kSinSum = "{ lambda ; a:f32[1000]. let\n"
                      "    b:f32[1000] = sin a\n"
                      "    c:f32[] = reduce_sum[axes=(0,)] b\n"
                      "  in (c,) }\n";

int64_t predicted_arena(const Linearization& lin, const BackendOptions& backends) {
  const StepProgram program = build_step_program(lin, backends, Pass::kBackward, InputMode::kLoadedEachRun);
  return program.layout().arena(MemorySpace::kDevice) + program.layout().arena(MemorySpace::kPinnedHost);
}

TEST(MemoryLimit, AStepOverTheLimitIsRefusedAndOneAtItRuns) {
  const Linearization lin = linearize_with(parse_program(kSinSum, "sin_sum"), "everything_saveable");
  BackendOptions backends{{"reference"}, &default_plugins()};
  const int64_t peak = predicted_arena(lin, backends);
  // At least the argument a and sin's output b (or its residual cos a), 4000 bytes each.
  ASSERT_GE(peak, 8000);

  backends.max_memory = peak - 1;
  try {
    OneShotRunner refused(lin, backends);
    FAIL() << "a step one byte over the limit ran";
  } catch (const MemoryLimitError& e) {
    EXPECT_EQ(e.needed(), peak);
    EXPECT_EQ(e.limit(), peak - 1);
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("the step's predicted peak of "), std::string::npos) << message;
    EXPECT_NE(message.find("(" + std::to_string(peak) + " bytes) is over the memory limit of "), std::string::npos)
        << message;
    EXPECT_NE(message.find("(" + std::to_string(peak - 1) + " bytes)"), std::string::npos) << message;
  }

  backends.max_memory = peak;
  OneShotRunner runner(lin, backends);
  const GradientResult result = runner.run({}, {Tensor{Type{DType::kF32, {1000}}, std::vector<double>(1000, 0.5)}});
  EXPECT_EQ(runner.measured_peak(MemorySpace::kDevice) + runner.measured_peak(MemorySpace::kPinnedHost), peak);
  ASSERT_TRUE(result.gradients[0].has_value());
  EXPECT_NEAR(result.gradients[0]->data[0], std::cos(0.5), 1e-6);
}

TEST(MemoryLimit, AShapeNoMachineHoldsIsRefusedWithoutAllocating) {
  // 4 TB: were the arena allocated, this would be std::bad_alloc or the OOM killer, not an Error.
  const char* huge = "{ lambda ; a:f32[1000000,1000000]. let\n"
                     "    b:f32[1000000,1000000] = sin a\n"
                     "    c:f32[] = reduce_sum[axes=(0, 1)] b\n"
                     "  in (c,) }\n";
  const Linearization lin = linearize_with(parse_program(huge, "huge"), "nothing_saveable");
  const BackendOptions backends{{"reference"}, &default_plugins()};  // the limit: the available memory
  try {
    OneShotRunner runner(lin, backends);
    FAIL() << "a 4 TB step was not refused";
  } catch (const MemoryLimitError& e) {
    EXPECT_GE(e.needed(), int64_t{4000000000000});
    EXPECT_LT(e.limit(), e.needed());
    EXPECT_NE(std::string(e.what()).find("over the machine's available memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(" TiB ("), std::string::npos) << e.what();
  }
}

TEST(MemoryLimit, TheAvailableMemoryIsWhatTheKernelSays) {
  // /proc/meminfo's MemAvailable in kB; a machine that runs these tests has more than 64 MiB free.
  const std::string meminfo = read_text("/proc/meminfo");
  const size_t at = meminfo.find("MemAvailable:");
  ASSERT_NE(at, std::string::npos);
  const int64_t kib = std::stoll(meminfo.substr(at + 13));
  // Read a moment apart, so within 10% of each other.
  EXPECT_NEAR(static_cast<double>(available_memory_bytes()), static_cast<double>(kib) * 1024, 0.1 * kib * 1024);
  EXPECT_GT(available_memory_bytes(), int64_t{64} << 20);
}

TEST(MemoryLimit, ShapesPastInt64AreBadInputAtTheirType) {
  // 2^32 * 2^32 elements overflow int64: every byte count after it would be undefined behaviour.
  try {
    parse_program("{ lambda ; a:f32[4294967296,4294967296]. let\n  in (a,) }\n", "big.jaxpr");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "big.jaxpr:1:14: the shape [4294967296,4294967296] has more than 2^63 elements");
  }
  try {
    // 2^61 f32 elements fit in int64, their 2^63 bytes do not.
    parse_program("{ lambda ; a:f32[2305843009213693952]. let\n  in (a,) }\n", "bytes.jaxpr");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "bytes.jaxpr:1:14: f32[2305843009213693952] takes more than 2^63 bytes");
  }
}

TEST(ByteSize, UnitsAreBinaryOrDecimalAsWritten) {
  EXPECT_EQ(parse_byte_size("64MiB")->bytes, 64.0 * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("1.5GiB")->bytes, 1.5 * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("2TiB")->bytes, 2.0 * 1024 * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("2GB")->bytes, 2e9);
  EXPECT_EQ(parse_byte_size("1e9")->bytes, 1e9);
  EXPECT_EQ(parse_byte_size("4096")->bytes, 4096);
  EXPECT_EQ(parse_byte_size("4096")->unit, "");
  EXPECT_EQ(parse_byte_size("512B")->bytes, 512);
  for (const char* bad : {"", "MiB", "-1", "12XB", "inf", "nan", "1e999", " 5", "5 MiB"})
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << bad;
}

}  // namespace
}  // namespace rematkit::testing
