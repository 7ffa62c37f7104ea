// One call's time on one thread, from rematkit_kernels_bench's elementwise/highway rows (the
// sitting: docs/performance.md, "Measurements behind choices in the code"): elementwise kernels
// only, where a per-call cost elsewhere can outweigh the loop. Exact arithmetic runs at the add's speed, tanh and exp at their own, the other transcendental
// functions at the speed Highway's own tanh had; an operand with size-1 dims at sub_per_row's when
// it leaves whole rows (else none).
#include "highway/elementwise_costs.hpp"

#include <algorithm>
#include <iterator>

#include "rematkit/plugin/measured_cost.hpp"

namespace rematkit::hwy_backend {

double one_pass_ns(double n) {
  return plugin::measured_ns({{256, 106}, {2048, 175}, {16384, 1450}, {131072, 18200}}, n);
}

double unary_ns(Unary op, double n) {
  static constexpr Unary kExact[] = {Unary::kNeg, Unary::kSqrt, Unary::kSquare, Unary::kRelu, Unary::kCopy};
  if (std::find(std::begin(kExact), std::end(kExact), op) != std::end(kExact)) return one_pass_ns(n);
  if (op == Unary::kTanh)  // XLA's rational tanh
    return plugin::measured_ns({{256, 79}, {2048, 363}, {16384, 2690}, {131072, 20000}}, n);
  if (op == Unary::kExp) return plugin::measured_ns({{256, 97}, {2048, 548}, {16384, 3670}, {131072, 29700}}, n);
  // The rest as Highway's own tanh measured (expm1 and its branches): log, sin and cos are of its kind.
  return plugin::measured_ns({{256, 190}, {2048, 937}, {16384, 7060}, {131072, 55600}}, n);
}

double by_rows_ns(bool grouped, double n) {
  // elementwise/highway/add_each_row: [rows, C] and [1, C], short rows grouped.
  if (grouped) return plugin::measured_ns({{4096, 476}, {32768, 2080}, {98304, 6460}, {393216, 37900}}, n);
  // elementwise/highway/sub_per_row: [rows, inner] and [rows, 1], a loop call per row.
  return plugin::measured_ns({{4096, 446}, {32768, 2040}, {98304, 5310}, {393216, 35800}}, n);
}

double half_ns(std::optional<Unary> op, bool approximate, bool f16, size_t operands, double n) {
  // Measured beside the f32 kernels on one AVX2 machine (bf16 and f16 add, max, exp and tanh at 2^11
  // to 2^17 elements, against the f32 add): bf16 took about a pass per operand and 1.5 for the
  // result of an exact op, 5 for an approximate one's; f16 (F16C's conversions) a fifth more.
  const double passes = (static_cast<double>(operands) + (approximate ? 5.0 : 1.5)) * (f16 ? 1.2 : 1.0);
  return (op ? unary_ns(*op, n) : one_pass_ns(n)) + passes * one_pass_ns(n);
}

}  // namespace rematkit::hwy_backend
