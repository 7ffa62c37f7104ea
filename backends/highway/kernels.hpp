// The Highway backend's kernels, SIMD-free declarations (each .cpp is compiled once per target
// and dispatches once per call).
#pragma once
#include <cstddef>
#include <cstdint>

namespace rematkit::hwy_backend {

enum class Unary : int { kNeg, kExp, kLog, kSin, kCos, kTanh, kLogistic, kSqrt, kRsqrt, kSquare, kRelu, kCopy, kErf };
enum class Binary : int { kAdd, kSub, kMul, kDiv, kMax, kMin };
enum class Compare : int { kGt, kGe, kLt, kLe, kEq, kNe };
enum class Bitwise : int { kAnd, kOr, kXor, kShiftLeft, kShiftRightLogical, kShiftRightArithmetic };

// y[i] = op(x[i]) for i < n.
void unary(Unary op, const float* x, float* y, size_t n);
// y[i] = x[i] ** power (repeated multiplication; 1 / x ** -power for negative powers).
void integer_pow(int64_t power, const float* x, float* y, size_t n);
// y[i] = a[i or 0] op b[i or 0] as 0 / 1 bytes.
void compare(Compare op, const float* a, bool a_scalar, const float* b, bool b_scalar, uint8_t* y, size_t n);
// y[i] = pred[i or 0] ? on_true[i] : on_false[i] (select_n's two-case form).
void select(const uint8_t* pred, bool pred_scalar, const float* on_false, const float* on_true, float* y, size_t n);
// y[i] = op(a[i or 0], b[i or 0]) for i < n; a scalar operand is read at index 0.
void binary(Binary op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* y, size_t n);
// The chosen target's loops themselves (what the functions above run on each chunk), for a caller
// that runs many short pieces, rows or fused segments: one dispatch for all of them, and the same
// loops, so the same bits. Ops as ints.
struct Loops {
  void (*unary)(int op, const float* x, float* y, size_t n);
  void (*integer_pow)(int64_t power, const float* x, float* y, size_t n);
  void (*binary)(int op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* y, size_t n);
  void (*compare)(int op, const float* a, bool a_scalar, const float* b, bool b_scalar, uint8_t* y, size_t n);
  void (*select)(const uint8_t* pred, bool pred_scalar, const float* on_false, const float* on_true, float* y, size_t n);
  void (*reduce_rows)(bool is_max, const float* x, float* y, size_t rows, size_t len);  // on one thread
  // One piece x[0, len) of a row, in order (pieces but the last of whole vectors): reduce_rows's
  // lane accumulator started at the first, carried in `carried` (kMaxLaneFloats floats, vector
  // aligned), finished into *y at the last; the row's value is reduce_rows's, bit for bit.
  void (*reduce_row_piece)(bool is_max, const float* x, size_t len, bool first, bool last, float* carried, float* y);
  // y[i] = from[(begin + i) / period] for i < len (a value per row spread over its row's elements).
  void (*spread_rows)(const float* from, size_t period, size_t begin, size_t len, float* y);
  // y[i] = op2(op1(a[i], b[i]), c[i]) (the inner result op2's left operand), or op2(c[i], op1(...))
  // (its right); each operand at 0 where scalar.
  void (*binary2)(int op1, int op2, bool inner_left, const float* a, bool a_scalar, const float* b, bool b_scalar,
                  const float* c, bool c_scalar, float* y, size_t n);
};
const Loops& loops();
// The most floats a vector of any target holds (HWY_MAX_BYTES / 4 where HWY_MAX_BYTES is largest).
inline constexpr size_t kMaxLaneFloats = 64;
// y[i] = a[i or 0] op b[i or 0] on 32-bit lanes (u32, or i32's bits; bitwise.cpp): a shift by 32 or
// more, or by a negative amount, gives 0, or the sign for the arithmetic one, as lax's shifts.
void bitwise(Bitwise op, const uint32_t* a, bool a_scalar, const uint32_t* b, bool b_scalar, uint32_t* y, size_t n);
// y[i] = bits for i < n (any 4-byte dtype's bits), in whole vectors; from kStreamFromBytes on,
// in chunks on oneTBB with non-temporal stores (a zeroed gradient table).
void fill32(uint32_t bits, uint32_t* y, size_t n);
// to[i] = from[i] for i < n (any 4-byte dtype's bits): memcpy, or from kStreamFromBytes on as fill32
// is split and streamed (a scatter-add's copied table).
void copy32(const uint32_t* from, uint32_t* to, size_t n);
// to[i] = from[i] for i < n (any 4-byte dtype's bits) with non-temporal stores where `to` is
// vector-aligned: a result too large to stay in cache is written without each line read first.
void stream32(const uint32_t* from, uint32_t* to, size_t n);
// Outputs from this size on are past any cache by the time a later step reads them: elementwise
// kernels compute them a block at a time and stream each block out (docs/performance.md, "Large
// results streamed past the caches").
inline constexpr size_t kStreamFromBytes = size_t{16} << 20;
// Orders the streamed stores before later ones: called before a thread hands its results on.
void stream_fence();
// y[r] = sum (or max) of x[r * len .. r * len + len) for r < rows; an empty row gives 0 (or -inf).
void reduce_rows(bool is_max, const float* x, float* y, size_t rows, size_t len);
// y[j] = sum (or max) over r < rows of x[r * len + j], for j < len (a reduction over leading axes,
// such as a bias's gradient); rows are combined in order, for any thread count.
void reduce_leading(bool is_max, const float* x, float* y, size_t rows, size_t len);

// jax.random on threefry keys (random_bits.cpp): `keys` are key<fry> elements, two u32 words each.
// random_bits gives `per_key` u32 words per key (their low bytes for bit_width 8); random_fold_in
// folds data (one word for every key when `scalar_data`) into each of `n` keys.
void random_bits(const uint32_t* keys, size_t num_keys, size_t per_key, bool low_byte, void* out);
// Words [begin, begin + n) of one key's 32-bit bits into out[0, n) (a fused chain's segment:
// dropout's bits hashed where the chain reads them).
void random_bits_piece(const uint32_t* key, size_t begin, size_t n, uint32_t* out);
void random_fold_in(const uint32_t* keys, const uint32_t* data, bool scalar_data, size_t n, uint32_t* out);
// jax.nn.softmax of each row: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).
void softmax_rows(const float* x, float* y, size_t rows, size_t len);
// A matrix read in place: element (i, j) at data[i * row_stride + j * col_stride] (a transposed
// one has a column stride, a head of attention's [B, S, H, Dh] rows H * Dh apart).
struct MatrixView {
  const float* data;
  size_t row_stride, col_stride;
};
// C[m,n] = A[m,k] B[k,n], C row-major; each C element sums over k in order, so results do not
// depend on the thread count. `packing`: gemm_packing_floats(m, n, k, b.col_stride == 1) floats of
// scratch, where B's panels are packed (null when that is 0).
// `epilogue`, when given, is called on each block of C once it is final: rows [r0, r1) x columns
// [c0, c1), while it is still in cache (a fused bias and activation read it there).
// It borrows the callable it is made from (no allocation, unlike std::function, so that a warm
// step allocates nothing); valid while that callable lives.
class Epilogue {
 public:
  template <typename F>
  explicit Epilogue(const F& body)
      : body_(&body), call_([](const void* b, size_t r0, size_t r1, size_t c0, size_t c1) {
          (*static_cast<const F*>(b))(r0, r1, c0, c1);
        }) {}
  void operator()(size_t r0, size_t r1, size_t c0, size_t c1) const { call_(body_, r0, r1, c0, c1); }

 private:
  const void* body_;
  void (*call_)(const void*, size_t, size_t, size_t, size_t);
};
void gemm(const MatrixView& a, const MatrixView& b, float* c, size_t m, size_t n, size_t k, float* packing,
          const Epilogue* epilogue = nullptr);
// The floats of packing gemm needs: all of B's panels, or where it reads B's rows in place a ragged
// last panel's.
size_t gemm_packing_floats(size_t m, size_t n, size_t k, bool b_rows_contiguous);

// The SIMD target the dispatch picks on this CPU, e.g. "AVX2".
const char* chosen_target();

}  // namespace rematkit::hwy_backend
