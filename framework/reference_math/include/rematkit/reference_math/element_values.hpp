// What an element of each dtype can hold, and how it is stored. The reference math holds every
// element as a double; these say how a double is rounded to a dtype (as XLA:CPU stores a result:
// f32 arithmetic inside, rounded to nearest even on store for bf16 and f16; integers wrap) and how
// it is read from and written to a buffer. Shared by the core (interpreter, step runner) and the
// reference backend, so they store the same bits.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "rematkit/plugin/rk_plugin.h"

namespace rematkit::reference {

inline bool is_floating_code(int32_t dtype) {
  return dtype == RK_DTYPE_F32 || dtype == RK_DTYPE_BF16 || dtype == RK_DTYPE_F16 || dtype == RK_DTYPE_F64;
}

// Width in bits and signedness of an integer dtype; bits 0 for floating dtypes and bool.
struct IntegerFormat {
  int bits = 0;
  bool is_signed = false;
};
inline IntegerFormat integer_format(int32_t dtype) {
  switch (dtype) {
    case RK_DTYPE_I32: return {32, true};
    case RK_DTYPE_I64: return {64, true};
    case RK_DTYPE_U32: return {32, false};
    case RK_DTYPE_U8: return {8, false};
    case RK_DTYPE_I8: return {8, true};
    default: return {};
  }
}
inline bool is_integer_code(int32_t dtype) { return integer_format(dtype).bits != 0; }

inline bool is_complex_code(int32_t dtype) { return dtype == RK_DTYPE_C64 || dtype == RK_DTYPE_C128; }
// The dtype of a complex dtype's parts: c64's f32, c128's f64.
inline int32_t complex_part_code(int32_t dtype) { return dtype == RK_DTYPE_C128 ? RK_DTYPE_F64 : RK_DTYPE_F32; }

inline int element_bytes(int32_t dtype) {
  switch (dtype) {
    case RK_DTYPE_C128: return 16;
    case RK_DTYPE_C64: case RK_DTYPE_F64: case RK_DTYPE_I64: case RK_DTYPE_KEY_FRY: return 8;
    case RK_DTYPE_BF16: case RK_DTYPE_F16: return 2;
    case RK_DTYPE_BOOL: case RK_DTYPE_U8: case RK_DTYPE_I8: return 1;
    default: return 4;
  }
}

// bfloat16 is the top half of an f32; rounding to nearest even on the dropped half, a NaN kept
// quiet (as Eigen's and XLA's float -> bfloat16 conversion does).
inline uint16_t bf16_bits(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}
inline float bf16_value(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// IEEE binary16 from an f32, rounding to nearest even, with overflow to infinity and gradual
// underflow to subnormals.
inline uint16_t f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t magnitude = x & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00 | ((magnitude >> 13) & 0x3FF));  // NaN
  if (magnitude >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds past 65504: infinity
  if (magnitude < 0x38800000) {  // below the smallest normal half (2^-14): a subnormal or zero
    // The value in units of 2^-24 (the smallest subnormal), rounded to nearest even.
    const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;  // exact: a power-of-two scale
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  // A normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to even.
  const uint32_t rebased = magnitude - (112u << 23);
  return static_cast<uint16_t>(sign | ((rebased + 0xFFF + ((rebased >> 13) & 1)) >> 13));
}
inline float f16_value(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in f32
    const float v = static_cast<float>(mantissa) / 16777216.0f;
    return sign ? -v : v;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000 | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// The range of an integer dtype.
inline double integer_lowest(IntegerFormat format) { return format.is_signed ? -std::ldexp(1.0, format.bits - 1) : 0.0; }
inline double integer_highest(IntegerFormat format) {
  return std::ldexp(1.0, format.is_signed ? format.bits - 1 : format.bits) - 1;
}

// A key<fry> element is held in its double's 64 bits: word 0 high, word 1 low. Kernels only move
// key elements or hand them to the threefry kernels; no arithmetic ever reads them as numbers.
inline double key_element(uint32_t word0, uint32_t word1) {
  return std::bit_cast<double>((static_cast<uint64_t>(word0) << 32) | word1);
}
inline uint32_t key_word(double key, int word) {
  const uint64_t bits = std::bit_cast<uint64_t>(key);
  return static_cast<uint32_t>(word == 0 ? bits >> 32 : bits);
}

// An integer value taken modulo 2^bits into the dtype's range (XLA's integer arithmetic wraps).
// Integers are exact in a double up to 2^53; an i64 beyond that is held to the nearest double.
inline double wrap_integer(double v, IntegerFormat format) {
  if (std::isnan(v)) return 0;
  const double modulus = std::ldexp(1.0, format.bits);
  double r = std::fmod(std::trunc(v), modulus);
  if (r < 0) r += modulus;
  if (format.is_signed && r >= modulus / 2) r -= modulus;
  return r;
}

// A float converted to an integer dtype as XLA converts it: toward zero, saturating at the
// dtype's range, NaN to 0.
inline double saturate_to_integer(double v, IntegerFormat format) {
  if (std::isnan(v)) return 0;
  const double lo = integer_lowest(format), hi = integer_highest(format);
  const double t = std::trunc(v);
  return t < lo ? lo : t > hi ? hi : t;
}

// `v` rounded to what `dtype` holds. With `exact_floats`, floating values stay exact doubles (the
// f64 arithmetic of finite-difference checks). A complex dtype rounds each part as its part dtype.
inline double round_to_code(double v, int32_t dtype, bool exact_floats) {
  switch (dtype) {
    case RK_DTYPE_F32: case RK_DTYPE_C64: return exact_floats ? v : static_cast<double>(static_cast<float>(v));
    case RK_DTYPE_BF16: return exact_floats ? v : static_cast<double>(bf16_value(bf16_bits(static_cast<float>(v))));
    case RK_DTYPE_F16: return exact_floats ? v : static_cast<double>(f16_value(f16_bits(static_cast<float>(v))));
    case RK_DTYPE_F64: case RK_DTYPE_C128: case RK_DTYPE_KEY_FRY: return v;
    case RK_DTYPE_BOOL: return v != 0 ? 1.0 : 0.0;
    default: return wrap_integer(v, integer_format(dtype));
  }
}

// The element at `i` of a buffer of `dtype`, and its store (rounded as round_to_code in f32
// arithmetic). For a complex dtype these are its real part: complex_part reads and writes either.
inline double load_element(const void* data, int32_t dtype, size_t i) {
  switch (dtype) {
    case RK_DTYPE_C64: return static_cast<const float*>(data)[2 * i];
    case RK_DTYPE_C128: return static_cast<const double*>(data)[2 * i];
    case RK_DTYPE_F32: return static_cast<const float*>(data)[i];
    case RK_DTYPE_BF16: return bf16_value(static_cast<const uint16_t*>(data)[i]);
    case RK_DTYPE_F16: return f16_value(static_cast<const uint16_t*>(data)[i]);
    case RK_DTYPE_F64: return static_cast<const double*>(data)[i];
    case RK_DTYPE_I32: return static_cast<const int32_t*>(data)[i];
    case RK_DTYPE_I64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case RK_DTYPE_U32: return static_cast<const uint32_t*>(data)[i];
    case RK_DTYPE_U8: return static_cast<const uint8_t*>(data)[i];
    case RK_DTYPE_I8: return static_cast<const int8_t*>(data)[i];
    case RK_DTYPE_KEY_FRY: {
      const uint32_t* words = static_cast<const uint32_t*>(data) + 2 * i;
      return key_element(words[0], words[1]);
    }
    default: return static_cast<const uint8_t*>(data)[i] != 0 ? 1.0 : 0.0;  // bool
  }
}
inline void store_element(void* data, int32_t dtype, size_t i, double v) {
  const double r = round_to_code(v, dtype, false);
  switch (dtype) {
    case RK_DTYPE_F32: static_cast<float*>(data)[i] = static_cast<float>(r); break;
    case RK_DTYPE_BF16: static_cast<uint16_t*>(data)[i] = bf16_bits(static_cast<float>(r)); break;
    case RK_DTYPE_F16: static_cast<uint16_t*>(data)[i] = f16_bits(static_cast<float>(r)); break;
    case RK_DTYPE_F64: static_cast<double*>(data)[i] = r; break;
    case RK_DTYPE_C64: static_cast<float*>(data)[2 * i] = static_cast<float>(r); break;
    case RK_DTYPE_C128: static_cast<double*>(data)[2 * i] = r; break;
    case RK_DTYPE_I32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(r); break;
    case RK_DTYPE_I64:  // 2^63 is the one double in range after wrapping that int64 cannot hold
      static_cast<int64_t*>(data)[i] = r >= 9223372036854775807.0 ? INT64_MAX : static_cast<int64_t>(r);
      break;
    case RK_DTYPE_U32: static_cast<uint32_t*>(data)[i] = static_cast<uint32_t>(r); break;
    case RK_DTYPE_U8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(r); break;
    case RK_DTYPE_I8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(r); break;
    case RK_DTYPE_KEY_FRY:
      static_cast<uint32_t*>(data)[2 * i] = key_word(r, 0);
      static_cast<uint32_t*>(data)[2 * i + 1] = key_word(r, 1);
      break;
    default: static_cast<uint8_t*>(data)[i] = r != 0 ? 1 : 0;  // bool
  }
}

// Part `part` (0 real, 1 imaginary) of complex element `i`: its part dtype's element 2i + part.
inline double load_complex_part(const void* data, int32_t dtype, size_t i, int part) {
  return load_element(data, complex_part_code(dtype), 2 * i + static_cast<size_t>(part));
}
inline void store_complex_part(void* data, int32_t dtype, size_t i, int part, double v) {
  store_element(data, complex_part_code(dtype), 2 * i + static_cast<size_t>(part), v);
}

// Two's-complement bits of an integer value (exact in its dtype), in the dtype's width.
inline uint64_t integer_bits(double v, IntegerFormat format) {
  const uint64_t bits = v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v))
                              : (v >= 9223372036854775808.0 ? static_cast<uint64_t>(v) : static_cast<uint64_t>(static_cast<int64_t>(v)));
  return format.bits == 64 ? bits : bits & ((uint64_t{1} << format.bits) - 1);
}
// The value whose bits (in the dtype's width) are `bits`.
inline double integer_from_bits(uint64_t bits, IntegerFormat format) {
  if (format.bits < 64) bits &= (uint64_t{1} << format.bits) - 1;
  if (format.is_signed && format.bits < 64 && (bits >> (format.bits - 1)) & 1) bits |= ~((uint64_t{1} << format.bits) - 1);
  return format.is_signed ? static_cast<double>(static_cast<int64_t>(bits)) : static_cast<double>(bits);
}

}  // namespace rematkit::reference
