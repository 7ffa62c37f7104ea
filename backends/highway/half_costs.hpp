// What one call of a bf16 or f16 layout, indexing or reduction kind costs on one thread
// (expected_ns), by the elements it writes or reads: moves of whole runs (a reshape, a broadcast,
// a concatenation), moves element by element (a transpose), and reductions accumulated in double
// (in SIMD where the order cannot show: half_row_reductions.hpp; the rows measured are such rows).
// Measured through BackendInstance::execute on this tree's 2-core AVX2 EPYC (the best of seven
// runs of 20 ms each, bf16: [rows, 256] reshaped, transposed and summed over its last axis); f16
// decodes in a few more instructions. The f32 kinds give no estimate.
#pragma once
#include "rematkit/plugin/measured_cost.hpp"

namespace rematkit::hwy_backend {

inline double half_copy_ns(double elements) {
  return plugin::measured_ns({{2048, 150}, {16384, 826}, {131072, 6785}, {1048576, 56459}}, elements);
}
inline double half_permute_ns(double elements) {
  return plugin::measured_ns({{2048, 1060}, {16384, 6474}, {131072, 51962}, {1048576, 402405}}, elements);
}
inline double half_reduce_ns(double elements) {
  return plugin::measured_ns({{2048, 545}, {16384, 3641}, {131072, 30214}, {1048576, 235592}}, elements);
}

}  // namespace rematkit::hwy_backend
