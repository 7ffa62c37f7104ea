// Building programs from C++: a caller's mistakes are bad-input errors naming what is wrong.
#include "rematkit/ir/program_builder.hpp"

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

TEST(ProgramBuilder, CallerMistakesAreUsageErrors) {
  ProgramBuilder b;
  const Atom x = b.argument("x", Type{DType::kF32, {2}});
  b.argument("y", Type{DType::kF32, {2}});
  EXPECT_EQ(usage_error([&] { b.call(Prim::kSin, Program{}, {x}); }),
            "program builder: call() builds pjit, checkpoint and custom_jvp_call, not sin (use emit())");
  EXPECT_EQ(usage_error([&] { b.emit(Prim::kCheckpoint, {x}); }),
            "<builder>:1: checkpoint's types come from its sub-program (build it with ProgramBuilder::call)");
  for (const std::vector<size_t>& order : {std::vector<size_t>{0}, {0, 0}, {0, 2}})
    EXPECT_EQ(usage_error([&] { b.reorder_arguments(order); }),
              "program builder: reorder_arguments needs a permutation of the arguments' positions");
  EXPECT_EQ(usage_error([&] { b.reorder_arguments({1, 0}); }), "");
}

}  // namespace
}  // namespace rematkit::testing
