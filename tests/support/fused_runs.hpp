// A program's forward pass fused wherever a backend can, as step programs fuse it, and the check
// that the chains Highway fuses give the reference backend's bits: shared by the tests of Highway's
// bf16 and f16 chains and of its integer lanes.
#pragma once

#include <string>
#include <vector>

#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/interpreter/tensor.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {

// The plan on `backends` fused wherever a backend can (FusionChoice{}); `fused_steps` gets each
// fused step's parts, and each kernel step on another backend than the first.
std::vector<Tensor> run_fused(const Linearization& lin, const RandomInputs& in, const std::vector<std::string>& backends,
                              std::vector<std::string>& fused_steps);

// The program fused on highway (every step there) gives the reference backend's bits in every output.
void expect_fused_reference_bits(const Linearization& lin, const RandomInputs& in);

}  // namespace rematkit::testing
