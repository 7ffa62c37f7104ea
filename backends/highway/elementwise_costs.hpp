// What one call of an elementwise kernel costs on one thread (expected_ns), from measured rows.
#pragma once
#include <cstddef>
#include <optional>

#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {

// One pass over n elements: exact arithmetic (an add, select, integer_pow, a copy).
double one_pass_ns(double n);
// A unary op over n elements, at its own speed.
double unary_ns(Unary op, double n);
// A binary op or comparison whose operand with size-1 dims leaves whole rows (binary_kernels.hpp):
// `grouped`, short each-row rows grouped; otherwise a loop call per row.
double by_rows_ns(bool grouped, double n);
// A single bf16 or f16 elementwise equation (run as a fused part): the f32 op's time (`op`, or an
// exact one's), and passes at the f32 add's speed to promote its operands and round its result
// (more for an `approximate` op's checks, and for f16).
double half_ns(std::optional<Unary> op, bool approximate, bool f16, size_t operands, double n);

}  // namespace rematkit::hwy_backend
