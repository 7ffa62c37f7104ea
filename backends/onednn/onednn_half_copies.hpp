// The widened products' and convolutions' conversions (onednn_widening.hpp): bf16 or f16 bits to
// f32 and back, with element_values.hpp's bits. Vectorized with Highway for the CPU it runs on
// where the build has Highway (onednn_half_copies.cpp), else plain loops; one thread each: the
// callers split long copies over the kernel's OpenMP team.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rematkit_onednn {

// to[i] = the f32 value of half bits from[i] (bf16, or f16 when `f16`); a NaN stays a NaN (quiet
// or not: a product of it is a NaN either way, which narrow_lanes makes quiet).
void widen_lanes(bool f16, const uint16_t* from, float* to, size_t n);
// to[i] = from[i] rounded to nearest even bf16 (or f16) bits, a NaN made quiet.
void narrow_lanes(bool f16, const float* from, uint16_t* to, size_t n);

}  // namespace rematkit_onednn
