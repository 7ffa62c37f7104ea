// bf16 and f16 as the Highway backend computes with them: elements promoted to f32, the f32 loops
// (kernels.hpp) run on them, and each result rounded back to nearest even as the reference math
// stores it (rematkit/reference_math/element_values.hpp: bf16_bits, f16_bits; a NaN kept quiet).
// The reference computes in double and rounds twice (to f32, then to bf16 or f16). An op that f32
// computes correctly rounded (add, sub, mul, div, sqrt, max, ...) gives the same f32 value from
// operands of 8 or 11 bits, so the same bits; an approximate one (exp, tanh, rsqrt, ...) is within
// a few f32 ulps, so only lanes that lie that close to a bf16 or f16 rounding boundary could round
// the other way: those lanes, and NaNs, are recomputed by the reference math itself
// (reference_lanes.hpp), so every lane has the reference's bits by construction. SIMD-free.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>

namespace rematkit::hwy_backend {

// An operand of a part, as the f32 loops read it: at [i], or at [0] when scalar.
struct LaneOperand {
  const float* data = nullptr;
  bool scalar = false;
};

// An operand of binary_round_bits: read as its bf16 or f16 bits, or, where bits is null, as the f32
// values it was promoted to (data); at [i], or at [0] when scalar.
struct HalfOperand {
  const uint16_t* bits = nullptr;
  const float* data = nullptr;
  bool scalar = false;
};

// Which lanes of an op's f32 results are recomputed before they are rounded.
struct HalfCheck {
  enum class Kind : uint8_t {
    kMove,    // the value moves (a copy, select_n, a conversion): no lane
    kExact,   // correctly rounded in f32, a NaN operand giving a NaN: lanes with a NaN result (payloads)
    kPicks,   // also correctly rounded, but picks an operand (max, min, clamp, relu): lanes with a NaN
              // operand too (lax's max is NaN beside a NaN; x86's is the second operand)
    kApprox,  // also lanes near a rounding boundary, tiny results, and operands out of range
  } kind = Kind::kMove;
  int32_t ulps = 0;  // kApprox: the f32 kernel's error bound, with margin, in f32 ulps
  // kApprox: results below this magnitude (zero included), where an f32 kernel's error is absolute
  // rather than relative, and operands outside [min_input, max_input] in magnitude (or non-finite).
  float tiny = 0x1p-120f;
  float min_input = 0x1p-120f;
  float max_input = std::numeric_limits<float>::max();
  bool negative_input = false;  // kApprox: whether negative operands are recomputed (outside log's domain)
  // kApprox: below this first operand the result is +0 in f32 (exp, logistic), whatever the kernel gives
  float zero_below = -std::numeric_limits<float>::infinity();
};

// The chosen target's loops (half_precision.cpp), for a segment of a fused chain or a chunk.
struct HalfLoops {
  // y[i] = the f32 value of bf16 (or f16, when `f16`) bits x[i], a NaN made quiet (as the
  // reference loads an element: through a double).
  void (*promote)(bool f16, const uint16_t* x, float* y, size_t n);
  // y[i] rounded to the nearest bf16 (or f16) value, held as f32, stored back to y[i] unless
  // `keep_f32` is false (no later part reads it), and its bits stored to bits[i] unless bits is null
  // (a result). The lanes `check` picks (reading the f32 results before rounding and the
  // `num_operands` operands) are written to `flagged`; returns how many.
  size_t (*round)(bool f16, const HalfCheck& check, const LaneOperand* operands, size_t num_operands, float* y,
                  bool keep_f32, uint16_t* bits, size_t n, uint32_t* flagged);
  // round's work for a binary part (kernels.hpp's Binary `op`, check.kind kExact or kPicks): its f32
  // result operands[0] op operands[1] computed, rounded and checked in one pass, the value held in a
  // register, so y is written once (or not at all) rather than by the op's loop and again by round.
  size_t (*binary_round)(bool f16, int op, const HalfCheck& check, const LaneOperand* operands, float* y, bool keep_f32,
                         uint16_t* bits, size_t n, uint32_t* flagged);
  // binary_round with an operand (or both) read as bf16 or f16 bits (of the result's dtype) and
  // promoted in registers: no promoted copy of it is written. Flags the lanes with a NaN result or
  // operand, which the caller recomputes from promoted operands.
  size_t (*binary_round_bits)(bool f16, int op, const HalfOperand* operands, float* y, bool keep_f32, uint16_t* bits,
                              size_t n, uint32_t* flagged);
  // Two binary parts of one bf16 or f16 dtype in one pass (ops add, sub or mul, whose checks flag
  // only NaN results): p = operands[0] op1 operands[1] rounded in a register, then q = p op2
  // operands[2] (or operands[2] op2 p when not `inner_left`) rounded, stored to y unless `keep_f32`
  // is false, and its bits to bits[i] unless bits is null. False where a lane of either is a NaN:
  // then nothing it stored counts, and the caller runs each part alone.
  bool (*binary2_round)(bool f16, int op1, int op2, bool inner_left, const LaneOperand* operands, float* y, bool keep_f32,
                        uint16_t* bits, size_t n);
  // convert_element_type from bool (`from_bool`; a nonzero byte is 1) or i32 (the nearest f32) to
  // bf16 or f16, rounded as round rounds a moved value: y[i] the value held as f32, and its bits to
  // bits[i] unless bits is null. x is read at [i], or at [0] when `scalar`. No lane is flagged.
  void (*convert_round)(bool f16, bool from_bool, const void* x, bool scalar, float* y, uint16_t* bits, size_t n);
  // y[i] = x[i] ** power by repeated multiplication in double, rounded to f32: lax.integer_pow as the
  // reference computes it (1 / x ** -power for negative powers).
  void (*integer_pow_f64)(int64_t power, const float* x, float* y, size_t n);
};
const HalfLoops& half_loops();

}  // namespace rematkit::hwy_backend
