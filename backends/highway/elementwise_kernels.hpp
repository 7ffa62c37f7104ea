// Kernel kinds of one output element per operand element: f32 unary ops and integer_pow, copies of
// 32-bit words (bitcast_convert_type), select_n's two-case form, integer comparisons and
// conversions into f32. SIMD-free: the f32 ones call kernels.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "highway/equation.hpp"
#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {

// y = op(x) on f32; also convert_element_type from f32 to f32, and the unary ops that only copy
// their operand (kUnaries' kCopy).
struct UnaryKernel {
  Unary op;
  size_t n;
  static std::optional<UnaryKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  double expected_ns() const;
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// y = x ** power on f32.
struct PowKernel {
  int64_t power;
  size_t n;
  static std::optional<PowKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  double expected_ns() const;
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// bitcast_convert_type between f32, i32 and u32: the bits as they are, copied.
struct BitcastKernel {
  size_t n;
  static std::optional<BitcastKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  double expected_ns() const;
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// select_n(pred, on_false, on_true) of f32 cases, the predicate of bool (or a rank-0 one).
struct SelectKernel {
  bool pred_scalar;
  size_t n;
  static std::optional<SelectKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  double expected_ns() const;
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// Comparisons of i32 or u32 (a causal mask's iotas, a one-hot's labels): operands as the output, or
// scalars.
struct CompareIntKernel {
  Compare op;
  bool a_scalar, b_scalar;
  bool is_unsigned;  // u32 operands, else i32
  size_t n;
  static std::optional<CompareIntKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// The loops of the two kinds below, which fused chains run on their segments too (SIMD,
// integer_lanes.cpp): y[i] = a[i or 0] op b[i or 0] on i32 (or u32) as 0 / 1 bytes; and
// y[i] = x[i or 0] (bool as 0 / 1, or i32) as the nearest float.
void compare_ints(Compare op, bool is_unsigned, const void* a, bool a_scalar, const void* b, bool b_scalar, uint8_t* y,
                  size_t n);
void convert_to_f32(bool from_bool, const void* x, bool scalar, float* y, size_t n);
// y[k] = start + k for k < n, as i32 (wrapping past its range) or as the nearest f32: an iota's
// counts along its last dim.
void count_up(bool as_f32, size_t start, void* y, size_t n);

// convert_element_type of a mask or a one-hot into floats: bool to 0 / 1, i32 to the nearest float.
struct ConvertToF32Kernel {
  bool from_bool;  // else from i32
  size_t n;
  static std::optional<ConvertToF32Kernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
