// Sums, maxima and minima of a bf16 or f16 row in SIMD, for the rows reduction_kernels.cpp reduces,
// with the reference's bits. The reference (structural.cpp's reduce) adds in double in order and
// stores the sum rounded to f32 and then to the half dtype; a SIMD sum adds in another order. The
// two give the same bits when
// - no partial sum rounds: every element is a multiple of the smallest element's ulp and the row's
//   length times its largest magnitude stays within 53 bits of that ulp, so every order is exact;
// - or the rounding cannot tell them apart: any order of n additions is within
//   (n - 1) 2^-53 / (1 - (n - 1) 2^-53) of the sum of magnitudes from the exact sum (Higham,
//   "Accuracy and Stability of Numerical Algorithms", 4.2), so when both ends of twice that interval
//   around the SIMD sum round to the same bits, the reference's sum does too (rounding is monotone).
// A row that is neither (a sum within that distance of a rounding boundary, a zero from
// cancellation), or that holds an infinity or a NaN, reports false and is reduced in order instead.
// Max and min pick an element; the pick differs by order only among NaNs and between +0 and -0, so
// such rows report false too. Rows added to rows (a sum over leading axes) keep the reference's
// order in each column. SIMD-free.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rematkit::hwy_backend {

struct HalfRowLoops {
  // The bits of the sum of the row's len elements (bf16 or, when `f16`, f16 bits) as the reference
  // stores it into *bits, or false when the order of the additions could change them.
  bool (*sum)(bool f16, const uint16_t* x, size_t len, uint16_t* bits);
  // The row's maximum (or minimum, when !max) into *bits, or false when the row holds an infinity or
  // a NaN or the result is a zero.
  bool (*extreme)(bool f16, bool max, const uint16_t* x, size_t len, uint16_t* bits);
  // acc[j] += the value of x[r * stride + j] for r from 0 to rows in order, each j in [0, n): the
  // reference's order for each column, so its bits, however many columns a vector holds.
  void (*add_rows)(bool f16, const uint16_t* x, size_t rows, size_t stride, size_t n, double* acc);
};
const HalfRowLoops& half_row_loops();

}  // namespace rematkit::hwy_backend
