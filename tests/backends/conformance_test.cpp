// Every primitive x every backend found (Highway on every SIMD target this CPU supports) x shapes
// (size 1, odd sizes, empty reductions, large) against the core's interpreter in f32 mode. Tolerances per primitive, relative to the largest
// |value| of the result: 0 for the reference backend (the same arithmetic), and the bounds below
// for SIMD backends (vectorised transcendentals, reordered sums).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>

#include <cmath>
#include <set>
#include <string>

#include <hwy/targets.h>

#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

struct Case {
  const char* name;
  const char* program;
  double simd_tolerance;  // for backends other than reference
  bool positive = false;  // inputs > 0 (log, sqrt, rsqrt)
};

const Case kCases[] = {
    {"add_same", "{ lambda ; a:f32[37] b:f32[37]. let c:f32[37] = add a b in (c,) }", 0},
    // A debug print has no kernel (the step executor runs it): what it reads is still computed,
    // and the results around it are those of the program without it.
    {"debug_print_between", "{ lambda ; a:f32[37]. let b:f32[37] = add a a; debug_callback[effect=Debug] b a; "
                            "c:f32[37] = mul b a in (c,) }", 0},
    {"sub_broadcast_rank0", "{ lambda ; a:f32[5,7] b:f32[]. let c:f32[5,7] = sub a b in (c,) }", 0},
    // Attention's p v with v as [B, S, H, Dh] (batch dims B and H not one stride: oneDNN takes
    // each as its own dim) and the product's transposes.
    {"dot_two_batch_dims", "{ lambda ; p:f32[2,4,6,6] v:f32[2,6,4,5]. let o:f32[2,4,6,5] = dot_general["
                           "dimension_numbers=(([3], [1]), ([0, 1], [0, 2]))] p v; "
                           "g:f32[2,4,6,6] = dot_general[dimension_numbers=(([3], [3]), ([0, 1], [0, 1]))] o o in (o, g) }", 1e-6},
    {"mul_broadcast_size1", "{ lambda ; a:f32[5,1] b:f32[1,9]. let c:f32[5,9] = mul a b in (c,) }", 0},
    // Size-1 dims that leave whole rows of 32 or more (Highway runs them row by row, nothing
    // expanded): one value per row, one row for all, both in one op, beside a scalar; and in a
    // comparison and a shift. Rows shorter than 32 are expanded first (the case above).
    {"row_broadcasts", "{ lambda ; a:f32[3,4,40] m:f32[3,4,1] b:f32[1,1,40] u:u32[3,40] s:u32[3,1]. let "
                       "d:f32[3,4,40] = sub a m; e:f32[3,4,40] = div b a; f:f32[3,4,40] = max m b; "
                       "g:bool[3,4,40] = gt a m; h:u32[3,40] = shift_right_logical u s; k:f32[3,4,40] = mul d 2.0:f32[]; "
                       "l:bool[3,4,40] = le b a in (d, e, f, g, h, k, l) }", 0},
    {"div", "{ lambda ; a:f32[33] b:f32[33]. let c:f32[33] = div a b in (c,) }", 0, true},
    {"max_min", "{ lambda ; a:f32[17] b:f32[17]. let c:f32[17] = max a b; d:f32[17] = min c 0.5 in (d,) }", 0},
    {"compare_select", "{ lambda ; a:f32[19] b:f32[19]. let p:bool[19] = ge a b; q:bool[19] = ne a 0.0; "
                       "c:f32[19] = select_n p a b; d:f32[19] = select_n q c a in (d, p) }", 0},
    {"compare_all", "{ lambda ; a:f32[9] b:f32[9]. let p:bool[9] = gt a b; q:bool[9] = lt a b; r:bool[9] = le a b; "
                    "s:bool[9] = eq a a in (p, q, r, s) }", 0},
    {"neg_square", "{ lambda ; a:f32[1]. let b:f32[1] = neg a; c:f32[1] = square b in (c,) }", 0},
    {"exp", "{ lambda ; a:f32[1000]. let b:f32[1000] = exp a in (b,) }", 4e-7},
    {"log", "{ lambda ; a:f32[1001]. let b:f32[1001] = log a in (b,) }", 4e-7, true},
    {"sin_cos", "{ lambda ; a:f32[999]. let b:f32[999] = sin a; c:f32[999] = cos a in (b, c) }", 4e-7},
    {"tanh_logistic", "{ lambda ; a:f32[99]. let b:f32[99] = tanh a; c:f32[99] = logistic a in (b, c) }", 4e-7},
    {"sqrt_rsqrt", "{ lambda ; a:f32[65]. let b:f32[65] = sqrt a; c:f32[65] = rsqrt a in (b, c) }", 2e-7, true},
    {"integer_pow", "{ lambda ; a:f32[31]. let b:f32[31] = integer_pow[y=3] a; c:f32[31] = integer_pow[y=-2] a in (b, c) }",
     2e-7, true},
    {"relu_name_stop", "{ lambda ; a:f32[23]. let b:f32[23] = relu a; c:f32[23] = name[name=n] b; "
                       "d:f32[23] = stop_gradient c in (d,) }", 0},
    {"convert", "{ lambda ; a:f32[15]. let i:i32[15] = convert_element_type[new_dtype=int32] a; "
                "b:f32[15] = convert_element_type[new_dtype=float32] i; p:bool[15] = convert_element_type[new_dtype=bool] a "
                "in (b, i, p) }", 0},
    {"reduce_sum", "{ lambda ; a:f32[7,13,3]. let b:f32[13] = reduce_sum[axes=(0, 2)] a; c:f32[] = reduce_sum[axes=(0, 1, 2)] a "
                   "in (b, c) }", 1e-6},
    {"reduce_max", "{ lambda ; a:f32[6,11]. let b:f32[6] = reduce_max[axes=(1,)] a in (b,) }", 0},
    {"reduce_empty", "{ lambda ; a:f32[0,3]. let b:f32[3] = reduce_sum[axes=(0,)] a; c:f32[3] = reduce_max[axes=(0,)] a "
                     "in (b, c) }", 0},
    {"reduce_empty_trailing", "{ lambda ; a:f32[3,0]. let b:f32[3] = reduce_sum[axes=(1,)] a; c:f32[3] = reduce_max[axes=(1,)] a "
                              "in (b, c) }", 0},
    {"reduce_leading", "{ lambda ; a:f32[300,2053] b:f32[3,5,17]. let c:f32[2053] = reduce_sum[axes=(0,)] a; "
                       "d:f32[2053] = reduce_max[axes=(0,)] a; e:f32[17] = reduce_sum[axes=(1, 0)] b in (c, d, e) }", 1e-6},
    {"select_long", "{ lambda ; a:f32[1003] b:f32[1003]. let p:bool[1003] = gt a b; c:f32[1003] = select_n p a b in (c,) }", 0},
    {"broadcast_trailing", "{ lambda ; a:f32[2,3]. let b:f32[2,3,5,4] = broadcast_in_dim[shape=(2, 3, 5, 4) "
                           "broadcast_dimensions=(0, 1)] a in (b,) }", 0},
    {"broadcast_scalar", "{ lambda ; a:f32[] b:f32[1]. let c:f32[4,33] = broadcast_in_dim[shape=(4, 33) broadcast_dimensions=()] a; "
                         "d:f32[7,3] = broadcast_in_dim[shape=(7, 3) broadcast_dimensions=(1,)] b in (c, d) }", 0},
    {"broadcast_in_dim", "{ lambda ; a:f32[3] b:f32[1,4]. let c:f32[2,3,5] = broadcast_in_dim[shape=(2, 3, 5) "
                         "broadcast_dimensions=(1,)] a; d:f32[6,4] = broadcast_in_dim[shape=(6, 4) broadcast_dimensions=(0, 1)] b "
                         "in (c, d) }", 0},
    // Size-1 dims added (a copy), and trailing dims copied as one block through size-1 dims on both
    // sides; an iota over a middle dim, its period repeated.
    {"broadcast_blocks", "{ lambda ; a:f32[2,3] b:f32[3,1,4]. let c:f32[2,3,1] = broadcast_in_dim[shape=(2, 3, 1) "
                         "broadcast_dimensions=(0, 1)] a; d:f32[2,3,1,4] = broadcast_in_dim[shape=(2, 3, 1, 4) "
                         "broadcast_dimensions=(1, 2, 3)] b; i:i32[2,3,4] = iota[dimension=1 dtype=int32 shape=(2, 3, 4) "
                         "sharding=None]; e:f32[2,3,4] = convert_element_type[new_dtype=float32 weak_type=False] i in (c, d, e) }", 0},
    {"reshape_squeeze_transpose", "{ lambda ; a:f32[2,3,4]. let b:f32[4,3,2] = transpose[permutation=(2, 1, 0)] a; "
                                  "c:f32[1,24] = reshape[new_sizes=(1, 24) dimensions=None] b; "
                                  "d:f32[24] = squeeze[dimensions=(0,)] c in (d,) }", 0},
    {"softmax", "{ lambda ; a:f32[3,17]. let b:f32[3,17] = softmax[axis=-1] a; c:f32[3,17] = softmax[axis=0] a in (b, c) }",
     4e-7},
    {"softmax_last_axis", "{ lambda ; a:f32[2,2,3,37] b:f32[4,3]. let c:f32[2,2,3,37] = softmax[axis=3] a; "
                          "d:f32[4,3] = softmax[axis=-1] b in (c, d) }", 4e-7},
    {"dot_activation_weight", "{ lambda ; a:f32[2,3,4] b:f32[4,5] c:f32[2,3,5]. let "
                              "d:f32[2,3,5] = dot_general[dimension_numbers=(([2], [0]), ([], []))] a b; "
                              "e:f32[4,5] = dot_general[dimension_numbers=(([0, 1], [0, 1]), ([], []))] a c in (d, e) }", 1e-6},
    {"dot_attention", "{ lambda ; q:f32[2,3,4,5] k:f32[2,3,6,5]. let "
                      "s:f32[2,3,4,6] = dot_general[dimension_numbers=(([3], [3]), ([0, 1], [0, 1]))] q k in (s,) }", 1e-6},
    {"dot_vector", "{ lambda ; a:f32[1] b:f32[1]. let c:f32[] = dot_general[dimension_numbers=(([0], [0]), ([], []))] a b in (c,) }",
     0},
    {"dot_odd", "{ lambda ; a:f32[7,13] b:f32[13,5]. let c:f32[7,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b "
                "in (c,) }", 1e-6},
    {"dot_large", "{ lambda ; a:f32[64,96] b:f32[96,80]. let c:f32[64,80] = dot_general[dimension_numbers=(([1], [0]), ([], []))] "
                  "a b in (c,) }", 1e-6},
    {"dot_transposed", "{ lambda ; a:f32[9,4] b:f32[6,9]. let c:f32[4,6] = dot_general[dimension_numbers=(([0], [1]), ([], []))] "
                       "a b in (c,) }", 1e-6},
    {"dot_batched", "{ lambda ; a:f32[3,5,7] b:f32[3,7,2]. let c:f32[3,5,2] = dot_general[dimension_numbers=(([2], [1]), "
                    "([0], [0]))] a b in (c,) }", 1e-6},
    // highway runs erf as XLA:CPU does (within 4 ulp); erf_inv reads a half of the input, not erf's
    // output, whose last bits erf_inv's steep ends would magnify.
    {"erf_erf_inv_tan", "{ lambda ; a:f32[37]. let b:f32[37] = erf a; h:f32[37] = mul a 0.5:f32[]; "
                        "c:f32[37] = erf_inv h; d:f32[37] = tan a in (b, c, d) }", 1e-6},
    // Exact gelu as jax.nn.gelu(approximate=False) prints it: 0.5 * x * erfc(-x * sqrt(1/2)).
    {"erfc_exact_gelu", "{ lambda ; a:f32[23]. let b:f32[23] = neg a; c:f32[23] = mul b 0.7071067690849304:f32[]; "
                        "d:f32[23] = erfc c; e:f32[23] = mul 0.5:f32[] a; f:f32[23] = mul e d in (f,) }", 0},
    {"exp2_expm1_log1p", "{ lambda ; a:f32[19]. let b:f32[19] = exp2 a; c:f32[19] = expm1 a; d:f32[19] = log1p a "
                         "in (b, c, d) }", 0, true},
    {"abs_sign_floor_ceil_round", "{ lambda ; a:f32[1,23]. let b:f32[1,23] = abs a; c:f32[1,23] = sign a; "
                                  "d:f32[1,23] = floor a; e:f32[1,23] = ceil a; f:f32[1,23] = round a; "
                                  "g:f32[1,23] = round[rounding_method=1] a; h:bool[1,23] = is_finite a "
                                  "in (b, c, d, e, f, g, h) }", 0},
    {"atan2_rem_pow", "{ lambda ; a:f32[17] b:f32[17] n:i32[17]. let c:f32[17] = atan2 a b; d:f32[17] = rem a b; "
                      "e:f32[17] = pow a b; f:f32[17] = pow a n; g:f32[17] = add_any c d in (e, f, g) }", 0, true},
    {"clamp", "{ lambda ; lo:f32[9] a:f32[9] hi:f32[9]. let b:f32[9] = clamp lo a hi; "
              "c:f32[9] = clamp -0.5:f32[] a 0.5:f32[] in (b, c) }", 0},
    {"bitwise_integers", "{ lambda ; a:i32[11] b:i32[11]. let c:i32[11] = and a b; d:i32[11] = or a b; "
                         "e:i32[11] = xor a b; f:i32[11] = not a; g:i32[11] = shift_left a b; "
                         "h:i32[11] = shift_right_logical a b; i:i32[11] = shift_right_arithmetic a b; "
                         "j:i32[11] = rem a b; k:i32[11] = abs a; l:i32[11] = sign a in (c, d, e, f, g, h, i, j, k, l) }", 0},
    // Amounts from -42 to 42: past the width and negative (a huge unsigned amount) as well as in
    // range; then dropout's recipe, the top 23 bits of random bits or'ed into 1.0's and read as f32.
    {"shifts_past_the_width", "{ lambda ; a:i32[11] b:i32[11]. let s:i32[11] = mul b 7:i32[]; g:i32[11] = shift_left a s; "
                              "h:i32[11] = shift_right_logical a s; i:i32[11] = shift_right_arithmetic a s; "
                              "u:u32[11] = bitcast_convert_type[new_dtype=uint32] a; v:u32[11] = bitcast_convert_type[new_dtype=uint32] s; "
                              "w:u32[11] = shift_left u v; x:u32[11] = shift_right_logical u v; z:u32[11] = shift_right_logical u 9:u32[]; "
                              "y:u32[11] = or z 1065353216:u32[]; f:f32[11] = bitcast_convert_type[new_dtype=float32] y; "
                              "m:u32[1,11] = reshape[new_sizes=(1, 11) dimensions=None] v; n:u32[3,11] = broadcast_in_dim[shape=(3, 11) "
                              "broadcast_dimensions=(0, 1)] m; q:u32[3,11] = xor n 2654435769:u32[] in (g, h, i, w, x, f, q) }", 0},
    {"bitwise_bools", "{ lambda ; a:f32[13] b:f32[13]. let p:bool[13] = gt a b; q:bool[13] = lt a 0.0; "
                      "r:bool[13] = and p q; s:bool[13] = or p q; t:bool[13] = xor p q; u:bool[13] = not p "
                      "in (r, s, t, u) }", 0},
    {"reduce_min_argmax_argmin", "{ lambda ; a:f32[6,11]. let b:f32[6] = reduce_min[axes=(1,)] a; "
                                 "c:i32[11] = argmax[axes=(0,) index_dtype=int32] a; "
                                 "d:i32[6] = argmin[axes=(1,) index_dtype=int32] a in (b, c, d) }", 0},
    {"cumsum", "{ lambda ; a:f32[5,9]. let b:f32[5,9] = cumsum[axis=1 reverse=False] a; "
               "c:f32[5,9] = cumsum[axis=0 reverse=True] a in (b, c) }", 1e-6},
    {"iota_concatenate", "{ lambda ; a:f32[2,3] b:f32[2,1]. let i:i32[2,4] = iota[dimension=1 dtype=int32 shape=(2, 4) "
                         "sharding=None]; f:f32[2,4] = convert_element_type[new_dtype=float32] i; "
                         "c:f32[2,8] = concatenate[dimension=1] a b f in (c,) }", 0},
    {"slice_strided", "{ lambda ; a:f32[7,9]. let b:f32[3,4] = slice[limit_indices=(7, 8) start_indices=(1, 0) "
                      "strides=(2, 2)] a; c:f32[2,9] = slice[limit_indices=(3, 9) start_indices=(1, 0) strides=None] a "
                      "in (b, c) }", 0},
    {"dynamic_slice_update", "{ lambda ; a:f32[6,5] u:f32[2,3] i:i32[]. let b:f32[2,3] = dynamic_slice[slice_sizes=(2, 3)] "
                             "a i 1:i32[]; c:f32[6,5] = dynamic_update_slice a u 5:i32[] i in (b, c) }", 0},
    {"sharding_constraint_reshard",
     "{ lambda ; a:f32[8,4]. let b:f32[8,4] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('x': 4), "
     "spec=PartitionSpec('x', None)) unconstrained_dims=frozenset()] a; c:f32[8,4] = reshard b in (c,) }", 0},
    {"pad_rev_copy", "{ lambda ; a:f32[3,4]. let b:f32[6,5] = pad[padding_config=((1, 0, 1), (2, -1, 0))] a 0.5:f32[]; "
                     "c:f32[6,5] = rev[dimensions=(0, 1)] b; d:f32[6,5] = copy c in (d,) }", 0},
    // A convolution kernel reversed in space (whole rows of [I, O] move), one dim in the middle,
    // and the last dim (element by element).
    {"rev_kernel_middle_last", "{ lambda ; w:f32[3,2,4,5]. let r:f32[3,2,4,5] = rev[dimensions=(0, 1)] w; "
                               "s:f32[3,2,4,5] = rev[dimensions=(2,)] w; t:f32[3,2,4,5] = rev[dimensions=(1, 3)] w "
                               "in (r, s, t) }", 0},
    {"reduce_precision", "{ lambda ; a:f32[29]. let b:f32[29] = reduce_precision[exponent_bits=8 mantissa_bits=7] a; "
                         "c:f32[29] = reduce_precision[exponent_bits=5 mantissa_bits=10] a in (b, c) }", 0},
    {"gather_scatter_add", "{ lambda ; a:f32[7,5] n:i32[3,1] u:f32[3,5]. let "
                           "g:f32[3,5] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) "
                           "fill_value=None mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(1, 5)] a n; "
                           "s:f32[7,5] = scatter-add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) "
                           "mode=GatherScatterMode.FILL_OR_DROP] a n u in (g, s) }", 0},
    {"bitcast_barrier", "{ lambda ; a:f32[9] n:i32[9]. let i:i32[9] = bitcast_convert_type[new_dtype=int32] a; "
                        "f:f32[9] = bitcast_convert_type[new_dtype=float32] i; b:f32[9] c:i32[9] = optimization_barrier "
                        "f n in (i, b, c) }", 0},
    // Mixed precision and every other dtype: stored as themselves, so each backend runs what it
    // supports and the reference backend the rest, bit for bit.
    {"bf16_f16_f64", "{ lambda ; a:bf16[7,5] b:bf16[5,3] h:f16[9] d:f64[9]. let c:f32[7,3] = dot_general["
                     "dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b; "
                     "e:bf16[7,3] = convert_element_type[new_dtype=bfloat16 weak_type=False] c; f:bf16[7,3] = tanh e; "
                     "g:f16[9] = mul h h; k:f64[9] = exp d; m:f16[9] = convert_element_type[new_dtype=float16] k in (f, g, k, m) }",
     1e-2},  // oneDNN's bf16 product (native, or f32 on widened operands) sums in f32, then rounds to bf16 (2^-8 relative)
    {"integer_dtypes", "{ lambda ; a:u32[9] b:u8[9] c:i8[9] d:i64[9]. let e:u32[9] = shift_left a 28:u32[]; "
                       "f:u32[9] = xor e a; g:u32[9] = mul f 2654435761:u32[]; h:u8[9] = add b b; k:i8[9] = mul c c; "
                       "m:i64[9] = add d d; n:f32[9] = convert_element_type[new_dtype=float32] g in (f, g, h, k, m, n) }", 0},
    {"random", "{ lambda ; k:key<fry>[3] r:u32[3,2] s:i32[3] d:u32[3]. let a:key<fry>[3] = random_wrap[impl=fry] r; "
               "b:key<fry>[3,2] = random_split[shape=(2,)] k; c:u32[3,2,2] = random_unwrap b; "
               "e:key<fry>[3] = random_fold_in a d; f:u32[3,5] = random_bits[bit_width=32 shape=(5,)] e; "
               "g:u8[3,4] = random_bits[bit_width=8 shape=(4,)] k; h:key<fry>[3] = random_seed[impl=fry] s; "
               "i:u32[3,2] = random_unwrap h; x:u32[3] y:u32[3] = threefry2x32 d 7:u32[] d d; j:key<fry>[3] = random_clone k; "
               "l:key<fry>[1] = slice[limit_indices=(2,) start_indices=(1,) strides=None] j; m:key<fry>[] = squeeze[dimensions=(0,)] l; "
               "n:u32[2] = random_unwrap m in (c, f, g, i, x, y, n) }", 0},
    // Bits of more words than Highway hashes at once (four vectors: 64 words on AVX-512), a ragged
    // tail after them, in both widths.
    {"random_bits_long_rows", "{ lambda ; k:key<fry>[3]. let a:u32[3,150] = random_bits[bit_width=32 shape=(150,)] k; "
                              "b:u8[3,2,75] = random_bits[bit_width=8 shape=(2, 75)] k in (a, b) }", 0},
    // Enough words that Highway hashes chunks of each key's words on threads, the last chunk ragged.
    {"random_bits_in_chunks", "{ lambda ; k:key<fry>[2]. let a:u32[2,40003] = random_bits[bit_width=32 shape=(40003,)] k; "
                              "b:u8[2,40003] = random_bits[bit_width=8 shape=(40003,)] k in (a, b) }", 0},
    {"reduce_prod", "{ lambda ; a:f32[3,5,2]. let b:f32[5] = reduce_prod[axes=(0, 2)] a; c:f32[3,5,2] = mul a a; "
                    "d:f32[] = reduce_prod[axes=(0, 1, 2)] c; e:f32[3,0,2] = slice[limit_indices=(3, 0, 2) start_indices=(0, 0, 0) "
                    "strides=None] a; f:f32[3,2] = reduce_prod[axes=(1,)] e in (b, d, f) }", 1e-5},
    {"sort", "{ lambda ; a:f32[6,5] b:i32[6,5]. let c:f32[6,5] = sort[dimension=0 is_stable=True num_keys=1] a; "
             "d:i32[6,5] e:f32[6,5] = sort[dimension=1 is_stable=True num_keys=1] b a; "
             "f:f32[6,5] g:i32[6,5] = sort[dimension=1 is_stable=True num_keys=2] a b in (c, d, e, f, g) }", 0},
    // Size 1 and empty operands of the primitives issue 12 added last.
    {"size_one_and_empty", "{ lambda ; a:f32[1] e:f32[0,3] k:key<fry>[0] h:bf16[1]. let "
                           "b:f32[1] = sort[dimension=0 is_stable=True num_keys=1] a; c:f32[0,3] = sort[dimension=0 "
                           "is_stable=True num_keys=1] e; d:f32[] = reduce_prod[axes=(0,)] a; f:f32[3] = "
                           "reduce_prod[axes=(0,)] e; g:f32[0,1] q:f32[0,2] = split[axis=1 sizes=(1, 2)] e; "
                           "r:u32[0,2] = random_bits[bit_width=32 shape=(2,)] k; s:key<fry>[0,2] = random_split[shape=(2,)] k; "
                           "t:u32[0,2,2] = random_unwrap s; u:f32[1] = erfc a; v:bf16[1] = tanh h; "
                           "w:f32[1] = convert_element_type[new_dtype=float32] v in (b, c, d, f, g, q, r, t, u, w) }", 0},
    {"cumulative", "{ lambda ; a:f32[7,4]. let b:f32[7,4] = cumprod[axis=0 reverse=True] a; c:f32[7,4] = cummax[axis=1 "
                   "reverse=False] a; d:f32[7,4] = cummin[axis=0 reverse=False] a; e:f32[7,4] = cumlogsumexp[axis=1 "
                   "reverse=True] a in (b, c, d, e) }", 0},
    {"split", "{ lambda ; a:f32[7,5]. let b:f32[7,1] c:f32[7,0] d:f32[7,4] = split[axis=1 sizes=(1, 0, 4)] a in (b, c, d) }", 0},
    {"split_middle_pad_edges", "{ lambda ; a:f32[2,6,3]. let b:f32[2,2,3] c:f32[2,4,3] = split[axis=1 sizes=(2, 4)] a; "
                               "d:f32[2,9,3] = pad[padding_config=((0, 0, 0), (3, 2, 0), (0, 0, 0))] c 0.0:f32[]; "
                               "e:f32[2,2,3] = pad[padding_config=((0, 0, 0), (0, 0, 0), (0, 0, 0))] b 1.5:f32[] in (d, e) }", 0},
    // Integer comparisons (a one-hot's labels against an iota, a causal mask) and conversions of
    // masks and integers to floats, 2^24 + 1 and the like rounding to the nearest float.
    {"integer_compares_to_float", "{ lambda ; a:i32[9] b:i32[9] u:u32[9] v:u32[9] m:bool[9]. let "
                                  "c:bool[9] = gt a b; d:bool[9] = ge a 3:i32[]; e:bool[9] = lt u v; f:bool[9] = le 7:u32[] u; "
                                  "g:bool[9] = eq a b; h:bool[9] = ne u v; k:f32[9] = convert_element_type[new_dtype=float32 weak_type=False] m; "
                                  "l:f32[9] = convert_element_type[new_dtype=float32 weak_type=False] a; "
                                  "n:i32[9] = mul a 16777217:i32[]; o:f32[9] = convert_element_type[new_dtype=float32 weak_type=False] n "
                                  "in (c, d, e, f, g, h, k, l, o) }", 0},
    {"causal_mask", "{ lambda ; a:f32[4]. let i:i32[4,4] = iota[dimension=0 dtype=int32 shape=(4, 4)]; "
                    "j:i32[4,4] = iota[dimension=1 dtype=int32 shape=(4, 4)]; p:bool[4,4] = ge i j; "
                    "q:bool[2,3,4,4] = broadcast_in_dim[shape=(2, 3, 4, 4) broadcast_dimensions=(2, 3)] p; "
                    "r:i32[3,4,4] = broadcast_in_dim[shape=(3, 4, 4) broadcast_dimensions=(1, 2)] i in (q, r) }", 0},
    {"conv_nhwc_hwio_same", "{ lambda ; a:f32[2,5,6,3] w:f32[3,3,3,4]. let c:f32[2,5,6,4] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }", 1e-6},
    {"conv_nchw_oihw_strided_valid", "{ lambda ; a:f32[2,3,7,8] w:f32[4,3,3,2]. let c:f32[2,4,3,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(1, 1) padding=((0, 0), (0, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(2, 3)] a w in (c,) }", 1e-6},
    {"conv_explicit_negative_padding", "{ lambda ; a:f32[1,6,7,2] w:f32[2,3,2,3]. let c:f32[1,6,3,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((2, -1), (0, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 2)] a w in (c,) }", 1e-6},
    {"conv_lhs_rhs_dilation", "{ lambda ; a:f32[1,2,4,5] w:f32[3,2,2,2]. let c:f32[1,3,8,4] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(2, 1) padding=((1, 1), (1, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 2) window_strides=(1, 1)] a w in (c,) }", 1e-6},
    {"conv_feature_groups_and_depthwise", "{ lambda ; a:f32[2,5,5,4] w:f32[3,3,2,6] d:f32[3,3,1,4]. let c:f32[2,5,5,6] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=2 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w; e:f32[2,3,3,4] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=4 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(2, 2)] a d in (c, e) }", 1e-6},
    {"conv_batch_groups", "{ lambda ; a:f32[4,3,5,5] w:f32[6,3,2,2]. let c:f32[2,6,4,4] = conv_general_dilated[batch_group_count=2 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(1, 1) padding=((0, 0), (0, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }", 1e-6},
    {"conv_1d_and_mixed_layouts", "{ lambda ; a:f32[2,3,9] w:f32[4,3,3] b:f32[2,6,5,3] v:f32[3,2,3,4]. let c:f32[2,4,5] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2)) feature_group_count=1 lhs_dilation=(1,) padding=((1, 2),) precision=None preferred_element_type=None rhs_dilation=(1,) window_strides=(2,)] a w; d:f32[2,4,6,6] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] b v in (c, d) }", 1e-6},
    {"reduce_window_max_sum_pools", "{ lambda ; x:f32[2,6,6,3]. let m:f32[2,3,3,3] = reduce_window_max[base_dilation=(1, 1, 1, 1) padding=((0, 0), (0, 0), (0, 0), (0, 0)) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 2, 2, 1) window_strides=(1, 2, 2, 1)] x; s:f32[2,6,6,3] = reduce_window_sum[base_dilation=(1, 1, 1, 1) padding=((0, 0), (1, 1), (1, 1), (0, 0)) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 3, 3, 1) window_strides=(1, 1, 1, 1)] x in (m, s) }", 1e-6},
    // JAX transposes a max or min pool only without window dilation (_select_and_gather_add_transpose).
    {"reduce_window_dilated", "{ lambda ; x:f32[5,7]. let m:f32[9,4] = reduce_window_min[base_dilation=(2, 1) padding=((1, 0), (0, 2)) window_dilation=(1, 1) window_dimensions=(2, 3) window_strides=(1, 2)] x; n:f32[9,4] = reduce_window_max[base_dilation=(2, 1) padding=((1, 0), (0, 2)) window_dilation=(1, 1) window_dimensions=(2, 3) window_strides=(1, 2)] x; s:f32[9,3] = reduce_window_sum[base_dilation=(2, 1) padding=((1, 0), (0, 2)) window_dilation=(1, 2) window_dimensions=(2, 3) window_strides=(1, 2)] x in (m, n, s) }", 1e-6},
    {"select_and_gather_scatter_add", "{ lambda ; t:f32[6,5] x:f32[6,5] s:f32[3,3]. let g:f32[3,3] = select_and_gather_add[base_dilation=(1, 1) padding=((0, 0), (1, 0)) select_prim=ge window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)] t x; h:f32[3,3] = select_and_gather_add[base_dilation=(1, 1) padding=((0, 0), (1, 0)) select_prim=le window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)] t x; u:f32[6,5] = select_and_scatter_add[padding=((0, 0), (1, 0)) select_prim=ge window_dimensions=(2, 2) window_strides=(2, 2)] s x; v:f32[6,5] = select_and_scatter_add[padding=((1, 1), (1, 1)) select_prim=le window_dimensions=(3, 3) window_strides=(2, 2)] s x in (g, h, u, v) }", 1e-6},
    {"dot_batch_middle_two_contractions", "{ lambda ; a:f32[2,3,4,5] b:f32[5,3,4,6]. let c:f32[3,2,6] = dot_general["
                                          "dimension_numbers=(([2, 3], [2, 0]), ([1], [1]))] a b in (c,) }", 1e-6},
    // Control flow: the loop and the branch run in the framework, their bodies' equations on the
    // backend under test.
    {"scan_consts_carry_xs",
     "{ lambda ; w:f32[6,6] c:f32[3,6] xs:f32[5,3,6]. let d:f32[3,6] ys:f32[5,3,6] = scan[jaxpr={ lambda ; "
     "a:f32[6,6] b:f32[3,6] x:f32[3,6]. let e:f32[3,6] = dot_general[dimension_numbers=(([1], [0]), ([], []))] b a; "
     "f:f32[3,6] = sin e; g:f32[3,6] = add f x in (g, e) } length=5 linear=(False, False, False) num_carry=1 "
     "num_consts=1 reverse=False unroll=1] w c xs in (d, ys) }", 2e-5},
    {"scan_reverse_no_xs",
     "{ lambda ; c:f32[7] k:i32[]. let d:f32[7] n:i32[] ys:f32[4,7] = scan[jaxpr={ lambda ; a:f32[7] m:i32[]. let "
     "e:f32[7] = tanh a; f:i32[] = add m 1 in (e, f, a) } length=4 num_carry=2 num_consts=0 reverse=True] c k "
     "in (d, n, ys) }", 2e-5},
    {"cond_three_branches",
     "{ lambda ; s:f32[] a:f32[9] b:f32[9]. let p:i32[] = convert_element_type[new_dtype=int32 weak_type=False] s; "
     "i:i32[] = clamp 0 p 2; c:f32[9] = cond[branches=(\n { lambda ; x:f32[9] y:f32[9]. let z:f32[9] = mul x y in (z,) }\n"
     " { lambda ; x:f32[9] y:f32[9]. let z:f32[9] = exp x in (z,) }\n"
     " { lambda ; x:f32[9] y:f32[9]. let z:f32[9] = sub y x in (z,) }\n)] i a b in (c,) }", 2e-5},
    {"while_counter",
     "{ lambda ; n:i32[] v:i32[5]. let _:i32[] w:i32[5] = while[body_jaxpr={ lambda ; i:i32[] x:i32[5]. let "
     "j:i32[] = add i 1; y:i32[5] = add x i in (j, y) } body_nconsts=0 cond_jaxpr={ lambda ; i:i32[] x:i32[5]. let "
     "p:bool[] = lt i 6 in (p,) } cond_nconsts=0] 0 v in (w,) }", 0},
    // Complex numbers: every backend but the reference declines them, so each runs there (0 tolerance).
    {"complex_parts", "{ lambda ; a:f32[6] b:f32[6]. let c:c64[6] = complex a b; d:c64[6] = conj[input_dtype=complex64] c; "
                      "e:c64[6] = conj[input_dtype=float32] a; f:f32[6] = real d; g:f32[6] = imag d; "
                      "h:f32[6] = abs c in (c, d, e, f, g, h) }", 0},
    {"fft_four_kinds", "{ lambda ; x:f32[3,8] z:c64[2,4,6]. let r:c64[3,5] = fft[fft_lengths=(8,) fft_type=FftType.RFFT] x; "
                       "y:f32[3,8] = fft[fft_lengths=(8,) fft_type=3] r; f:c64[2,4,6] = fft[fft_lengths=(4, 6) "
                       "fft_type=jax.lax.FftType.FFT] z; g:c64[2,4,6] = fft[fft_lengths=(6,) fft_type=1] z; "
                       "h:f32[2,4,10] = fft[fft_lengths=(4, 10) fft_type=IRFFT] z in (r, y, f, g, h) }", 0},
    {"complex_arithmetic", "{ lambda ; a:c64[4,3] b:c64[3,2] s:c64[]. let c:c64[4,2] = dot_general["
                           "dimension_numbers=(([1], [0]), ([], []))] a b; d:c64[4,2] = mul c (1-2j); "
                           "e:c64[4,2] = div d s; f:c64[4,2] = exp e; g:c64[4,2] = add f 1j:c64[]; "
                           "h:c64[4,2] = sqrt g; i:c64[2] = reduce_sum[axes=(0,)] h; k:c64[2] = integer_pow[y=3] i; "
                           "l:c64[2] = log k; m:bool[2] = ne l l; n:c128[2] = convert_element_type[new_dtype=complex128] l "
                           "in (c, f, h, k, l, m, n) }", 0},
    {"complex_scan", "{ lambda ; w:c64[3] c:c64[3] xs:c64[4,3]. let d:c64[3] ys:c64[4,3] = scan[jaxpr={ lambda ; "
                     "v:c64[3] a:c64[3] x:c64[3]. let e:c64[3] = mul a x; f:c64[3] = add e v in (f, e) } length=4 "
                     "num_carry=1 num_consts=1 reverse=False] w c xs in (d, ys) }", 0},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// The backend under test first; what it declines runs on the reference backend.
BackendOptions preferring(const std::string& backend) {
  BackendOptions options{{backend}, &default_plugins()};
  if (backend != "reference") options.preference.push_back("reference");
  return options;
}

// Every backend; the highway backend once per SIMD target this CPU supports (libhwy's dispatch
// state is shared with the plugin). Target 0 means "as dispatch picks".
std::vector<std::pair<std::string, int64_t>> backends_and_targets(const std::vector<std::string>& backends) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const std::string& b : backends) {
    if (b != "highway") {
      out.emplace_back(b, 0);
      continue;
    }
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) out.emplace_back(b, target);
  }
  return out;
}

// Every gradient of `got` within 2e-5 of `expected`'s, relative to the largest of that gradient
// (at least 1): what a fast backend's rounding may move.
void expect_gradients_near(const GradientResult& got, const GradientResult& expected) {
  for (size_t a = 0; a < got.gradients.size(); ++a) {
    ASSERT_TRUE(got.gradients[a].has_value());
    double scale = 1;
    for (double v : expected.gradients[a]->data) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < got.gradients[a]->data.size(); ++i)
      EXPECT_NEAR(got.gradients[a]->data[i], expected.gradients[a]->data[i], 2e-5 * scale) << a << " " << i;
  }
}

class ConformanceTest : public ::testing::TestWithParam<Case> {};

// A 1x1 convolution at stride 2 on an even size (a residual block's downsample): JAX's transposes
// pad it negatively, ((0, -1), (0, -1)) for the kernel's gradient, and its lhs transpose needs a
// high padding of -1 in oneDNN's terms, where oneDNN's rounding down lets 0 stand for it (the row
// dropped is one no window reaches). Both run on oneDNN, as the forward does, and agree with the
// interpreter.
TEST(BackendSet, OneDnnRunsTheTransposesOfAStridedConvolutionOnAnEvenSize) {
  const std::vector<std::string> installed = default_plugins().backend_names();
  if (std::find(installed.begin(), installed.end(), "onednn") == installed.end()) GTEST_SKIP() << "no onednn backend in this build";
  const Program program = parse_program(R"({ lambda ; x:f32[2,8,8,4] w:f32[1,1,4,6]. let
      c:f32[2,4,4,6] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((0, 0), (0, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(2, 2)] x w
      t:f32[2,4,4,6] = tanh c
    in (t,) })", "downsample");
  const Linearization lin = linearize_with(program);
  const BackendOptions options{{"onednn", "reference"}, &default_plugins()};
  const StepProgram steps = build_step_program(lin, options, Pass::kBackward, InputMode::kLoadedEachRun);
  std::vector<std::string> convolutions;
  for (const Step& step : steps.steps())
    if (step.kind == StepKind::kKernel && lin.graph.eqns[step.equation].prim == Prim::kConvGeneralDilated)
      convolutions.push_back(step.kernel->backend());
  EXPECT_EQ(convolutions, (std::vector<std::string>{"onednn", "onednn", "onednn"}));
  const RandomInputs in = random_inputs(program, 5);
  const GradientResult expected = interpret_gradient(lin, in.constants, in.arguments, Arithmetic::kFloat32);
  expect_gradients_near(run_gradient(lin, in.constants, in.arguments, options), expected);
}

TEST_P(ConformanceTest, EveryBackendAgreesWithTheInterpreter) {
  const Case& c = GetParam();
  const Program program = parse_program(c.program, c.name);
  const RandomInputs in = random_inputs(program, 17, 0.25, 2.0, !c.positive);
  const std::vector<Tensor> expected = evaluate_program(program, in.constants, in.arguments, Arithmetic::kFloat32);
  const Linearization lin = linearize_with(program);
  const std::vector<std::string> backends = default_plugins().backend_names();
  ASSERT_FALSE(backends.empty());
  for (const auto& [backend, target] : backends_and_targets(backends)) {
    SCOPED_TRACE(backend + (target ? std::string(" on ") + hwy::TargetName(target) : std::string()));
    hwy::SetSupportedTargetsForTest(target);
    const std::vector<Tensor> got = run_forward(lin, in.constants, in.arguments, preferring(backend));
    hwy::SetSupportedTargetsForTest(0);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t o = 0; o < got.size(); ++o) {
      ASSERT_EQ(got[o].type, expected[o].type);
      double scale = 0;
      for (double v : expected[o].data) scale = std::max(scale, std::fabs(v));
      const double tolerance = backend == "reference" ? 0.0 : c.simd_tolerance * std::max(scale, 1.0);
      ASSERT_EQ(got[o].imag.size(), expected[o].imag.size());
      for (size_t i = 0; i < got[o].data.size(); ++i) {
        if (std::isinf(expected[o].data[i])) {
          EXPECT_EQ(got[o].data[i], expected[o].data[i]);
        } else {
          EXPECT_NEAR(got[o].data[i], expected[o].data[i], tolerance) << "output " << o << " element " << i;
        }
      }
      for (size_t i = 0; i < got[o].imag.size(); ++i)  // a complex output's imaginary parts: reference's alone
        EXPECT_EQ(got[o].imag[i], expected[o].imag[i]) << "output " << o << " element " << i << " (imaginary part)";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Primitives, ConformanceTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// A primitive added to the table is checked on every backend only once a case above runs it. A
// host call never runs (tests/framework/host_callback_test.cpp); collectives and shard_map run
// between the devices of a simulated mesh, never on a backend (tests/framework/collectives_test.cpp).
TEST(Conformance, EveryPrimitiveOfTheTableHasACase) {
  std::set<Prim> covered;
  for (const Case& c : kCases)
    for (const Equation& eqn : parse_program(c.program, c.name).eqns) covered.insert(eqn.prim);
  for (const PrimInfo& info : kPrimitiveTable)
    if (!has_body(info.prim) && !is_host_call(info.prim) && !is_collective(info.prim) && !is_mapped_call(info.prim)) {
      EXPECT_TRUE(covered.count(info.prim)) << info.name << " has no conformance case";
    }
}

// Programs mixing everything, with their gradients: the same on every backend as on the interpreter,
// and bit-identical from run to run on a fixed backend.
class BackendGradientTest : public ::testing::TestWithParam<ResidualCase> {};

TEST_P(BackendGradientTest, SameAsTheInterpreterAndRepeatable) {
  const Program program = load_program(GetParam().program_path);
  const RandomInputs in = random_inputs(program, 5);
  const Linearization lin = linearize_with(program);
  const GradientResult expected = interpret_gradient(lin, in.constants, in.arguments, Arithmetic::kFloat32);
  for (const std::string& backend : default_plugins().backend_names()) {
    SCOPED_TRACE(backend);
    const BackendOptions options = preferring(backend);
    const GradientResult first = run_gradient(lin, in.constants, in.arguments, options);
    const GradientResult second = run_gradient(lin, in.constants, in.arguments, options);
    for (size_t a = 0; a < first.gradients.size(); ++a) {
      if (!expected.gradients[a]) continue;
      EXPECT_EQ(first.gradients[a]->data, second.gradients[a]->data);  // bitwise, run to run
      if (backend == "reference") {
        EXPECT_EQ(first.gradients[a]->data, expected.gradients[a]->data);
      } else {
        double scale = 1;
        for (double v : expected.gradients[a]->data) scale = std::max(scale, std::fabs(v));
        for (size_t i = 0; i < first.gradients[a]->data.size(); ++i)
          EXPECT_NEAR(first.gradients[a]->data[i], expected.gradients[a]->data[i], 2e-5 * scale);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, BackendGradientTest, ::testing::ValuesIn(residual_cases()),
                         [](const auto& info) { return info.param.name; });

// "prim@backend" for each kernel of the forward pass on `backends` (highway, then reference).
std::vector<std::string> forward_kernel_backends(const Linearization& lin,
                                                 const std::vector<std::string>& backends = {"highway", "reference"}) {
  BackendOptions options{backends, &default_plugins()};
  options.fusion = BackendOptions::Fusion::kOff;  // each equation's own binding (fusion_test.cpp has the fused ones)
  const StepProgram forward = build_step_program(lin, options, Pass::kForward, InputMode::kLoadedEachRun);
  std::vector<std::string> steps;
  for (const Step& step : forward.steps())
    if (step.kind == StepKind::kKernel)
      steps.push_back(std::string(prim_name(lin.graph.eqns[step.equation].prim)) + "@" + step.kernel->backend());
  return steps;
}

TEST(BackendSet, EachEquationGoesToTheFirstBackendThatRunsIt) {
  // Highway runs sin, comparisons, reductions, transpose and products; it declines conversions to
  // integers, which then run on the next backend listed. The forward pass also computes cos, sin's
  // JVP coefficient, which the backward pass keeps (a sum and a conversion have none).
  const Program program = parse_program(R"({ lambda ; a:f32[4,8] w:f32[8,3]. let
      b:f32[4,8] = sin a
      p:bool[4,8] = gt b 0.0
      m:f32[8] = reduce_sum[axes=(0,)] b
      i:i32[8] = convert_element_type[new_dtype=int32] m
      t:f32[8,4] = transpose[permutation=(1, 0)] b
      s:f32[8] = reduce_sum[axes=(1,)] t
      d:f32[4,3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] b w
    in (p, i, s, d) })", "mixed");
  const Linearization lin = linearize_with(program);
  const std::vector<std::string> steps = forward_kernel_backends(lin);
  EXPECT_EQ(steps, (std::vector<std::string>{"sin@highway", "cos@highway", "gt@highway", "reduce_sum@highway", "convert_element_type@reference",
                                             "transpose@highway", "reduce_sum@highway", "dot_general@highway"}));
}

#ifdef REMATKIT_HAVE_ONEDNN
// oneDNN is listed first, but both it and Highway estimate elementwise calls (ABI 1.7's expected_ns,
// from their measured tables): a small add and exp cost more as a oneDNN call than on Highway, so
// Highway takes them; at 2^18 elements oneDNN's loops win and keep them.
// Products have no estimate and stay where the preference puts them; the reference backend gives
// none, so it never takes an equation from a backend before it.
TEST(BackendSet, AnEquationGoesToALaterBackendOnlyWhereBothEstimateAndItsIsLower) {
  if (!backend_installed("onednn") || !backend_installed("highway")) GTEST_SKIP() << "onednn or highway is not built";
  const Program program = parse_program(R"({ lambda ; a:f32[8,32] b:f32[512,512] w:f32[32,4]. let
      c:f32[8,32] = add a a
      d:f32[8,32] = exp c
      e:f32[512,512] = add b b
      f:f32[512,512] = exp e
      g:f32[8,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] d w
    in (f, g) })", "sizes");
  const Linearization lin = linearize_with(program);
  EXPECT_EQ(forward_kernel_backends(lin, {"onednn", "highway", "reference"}),
            (std::vector<std::string>{"add@highway", "exp@highway", "add@onednn", "exp@onednn", "dot_general@onednn"}));
  // The reference backend first: its missing estimate leaves every equation with it.
  const std::vector<std::string> reference = forward_kernel_backends(lin, {"reference", "highway"});
  EXPECT_EQ(reference.size(), 5u);
  for (const std::string& step : reference) EXPECT_EQ(step.substr(step.find('@')), "@reference") << step;
}
#endif

TEST(BackendSet, HighwayGathersAndScattersWholeRows) {
  // An embedding lookup and its transpose take whole rows, so Highway runs them; a gather of one
  // element per index does not, and goes to the next backend.
  const Program program = parse_program(R"({ lambda ; t:f32[6,4] i:i32[3,1] u:u32[3,1]. let
      g:f32[3,4] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None mode=GatherScatterMode.FILL_OR_DROP slice_sizes=(1, 4)] t i
      s:f32[6,4] = scatter-add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) mode=GatherScatterMode.FILL_OR_DROP] t u g
      e:f32[3] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None mode=GatherScatterMode.CLIP slice_sizes=(1, 1)] t i
    in (s, e) })", "rows");
  const Linearization lin = linearize_with(program);
  const std::vector<std::string> steps = forward_kernel_backends(lin);
  EXPECT_EQ(steps, (std::vector<std::string>{"gather@highway", "scatter-add@highway", "gather@reference"}));
  // Out-of-bounds ids: a NaN row from the gather, a dropped update in the scatter-add.
  Tensor table = Tensor::filled(Type{DType::kF32, {6, 4}, MemorySpace::kDevice}, 1.0);
  const std::vector<Tensor> got = run_forward(lin, {}, {table, tensor_of({3, 1}, {5, -1, 2}, DType::kI32),
                                                         tensor_of({3, 1}, {0, 0, 9}, DType::kU32)},
                                              BackendOptions{{"highway", "reference"}, &default_plugins()});
  const std::vector<Tensor> expected =
      evaluate_program(program, {}, {table, tensor_of({3, 1}, {5, -1, 2}, DType::kI32), tensor_of({3, 1}, {0, 0, 9}, DType::kU32)},
                       Arithmetic::kFloat32);
  for (size_t o = 0; o < got.size(); ++o)
    for (size_t i = 0; i < got[o].data.size(); ++i) {
      if (std::isnan(expected[o].data[i])) EXPECT_TRUE(std::isnan(got[o].data[i]));
      else EXPECT_EQ(got[o].data[i], expected[o].data[i]) << o << " " << i;
    }
}

#ifdef REMATKIT_HAVE_ONEDNN
// A small CNN step as Flax traces it: a strided NHWC convolution, a depthwise one, max and average
// pooling. oneDNN runs the convolutions forward, the strided one's lhs transpose as backward data
// (a dilated lhs), the kernels' gradients as backward weights, both pools and the sum pool's
// transpose; the depthwise lhs transpose (unstrided) is a forward convolution of the reversed
// kernel. The max pool's transpose goes to the reference backend, and the gradient is the
// interpreter's.
TEST(BackendSet, OneDnnRunsConvolutionsTheirTransposesAndPools) {
  const Program program = parse_program(R"({ lambda ; x:f32[2,8,8,3] w:f32[3,3,3,4] d:f32[3,3,1,4]. let
      c:f32[2,4,4,4] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((0, 1), (0, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(2, 2)] x w
      e:f32[2,4,4,4] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=4 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] c d
      f:f32[2,4,4,4] = tanh e
      m:f32[2,2,2,4] = reduce_window_max[base_dilation=(1, 1, 1, 1) padding=((0, 0), (0, 0), (0, 0), (0, 0)) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 2, 2, 1) window_strides=(1, 2, 2, 1)] f
      s:f32[2,3,3,4] = reduce_window_sum[base_dilation=(1, 1, 1, 1) padding=((0, 0), (1, 1), (1, 1), (0, 0)) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 2, 2, 1) window_strides=(1, 2, 2, 1)] f
    in (m, s) })", "cnn");
  const Linearization lin = linearize_with(program);
  const BackendOptions options{{"onednn", "reference"}, &default_plugins()};
  const StepProgram steps = build_step_program(lin, options, Pass::kBackward, InputMode::kLoadedEachRun);
  std::multiset<std::string> on_onednn, on_reference;
  for (const Step& step : steps.steps()) {
    if (step.kind != StepKind::kKernel) continue;
    const FlatEquation& eqn = lin.graph.eqns[step.equation];
    std::string what(prim_name(eqn.prim));
    if (what.find("conv") == std::string::npos && what.find("window") == std::string::npos &&
        what.find("select_and") == std::string::npos)
      continue;  // the elementwise rest
    if (eqn.prim == Prim::kConvGeneralDilated) {
      const ConvParams c = conv_params(eqn.params, eqn.where);
      what += c.lhs_dilation != std::vector<int64_t>{1, 1} ? " (dilated lhs)" : c.dims.lhs_spec[1] == 0 ? " (kernel's gradient)" : "";
    }
    (step.kernel->backend() == "onednn" ? on_onednn : on_reference).insert(what);
  }
  EXPECT_EQ(on_onednn, (std::multiset<std::string>{"conv_general_dilated", "conv_general_dilated",
                                                    "conv_general_dilated (dilated lhs)", "conv_general_dilated",
                                                    "conv_general_dilated (kernel's gradient)",
                                                    "conv_general_dilated (kernel's gradient)", "reduce_window_max",
                                                    "reduce_window_sum", "reduce_window_sum"}));
  // The max pool's transpose; its JVP, select_and_gather_add, is transposed, never run.
  EXPECT_EQ(on_reference, (std::multiset<std::string>{"select_and_scatter_add"}));
  const RandomInputs in = random_inputs(program, 11);
  const GradientResult expected = interpret_gradient(lin, in.constants, in.arguments, Arithmetic::kFloat32);
  expect_gradients_near(run_gradient(lin, in.constants, in.arguments, options), expected);
}

TEST(BackendInstance, OptionsAreChecked) {
  ASSERT_NE(default_plugins().backend("onednn"), nullptr) << "the onednn backend plugin was not found";
  Params good, bad;
  good.set("num_threads", ParamValue::of_int(1));
  bad.set("num_threads", ParamValue::of_int(0));
  EXPECT_NO_THROW(BackendInstance(default_plugins(), "onednn", good));
  try {
    BackendInstance(default_plugins(), "onednn", bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "backend 'onednn' could not start: the onednn backend takes num_threads=N (N >= 1), "
                                     "bf16_matmul='native', 'emulated' or 'widened', transposed_operands='chosen', 'strides' or "
                                     "'reordered', weights_layout='preferred' or 'as_it_lies', large_operands='sgemm' or "
                                     "'matmul' and widened_block_bytes=N (N >= 0)");
  }
}

// bf16 operands, an f32 (preferred_element_type) or a bf16 result: oneDNN's bf16 matmul, natively
// on AVX512_BF16 and, with bf16_matmul='emulated', on any AVX-512 core; elsewhere, or with
// bf16_matmul='widened', its f32 matmul on operands widened in the workspace. Small integers, so
// every product and sum is exact and the expected values are the integer dot products.
TEST(BackendInstance, OneDnnMultipliesBf16) {
  for (const char* how : {"emulated", "widened"}) {
    SCOPED_TRACE(how);
    Params options;
    options.set("bf16_matmul", ParamValue::of_string(how));
    BackendInstance onednn(default_plugins(), "onednn", options);
    constexpr int64_t m = 5, k = 7, n = 3;
    std::vector<uint16_t> a(m * k), b(k * n);
    std::vector<double> a_values(a.size()), b_values(b.size());
    auto bf16_of = [](double v) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16); };
    for (size_t i = 0; i < a.size(); ++i) a[i] = bf16_of(a_values[i] = static_cast<double>(static_cast<int>(i % 7) - 3));
    for (size_t i = 0; i < b.size(); ++i) b[i] = bf16_of(b_values[i] = static_cast<double>(static_cast<int>(i % 5) - 2));
    for (DType result : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(std::string(dtype_name(result)));
      const DotDims dims{{1}, {0}, {}, {}};
      const auto kernel = onednn.prepare(Prim::kDotGeneral, dot_general_params(dims, result),
                                         {Type{DType::kBF16, {m, k}, MemorySpace::kDevice}, Type{DType::kBF16, {k, n}, MemorySpace::kDevice}},
                                         {Type{result, {m, n}, MemorySpace::kDevice}}, "bf16 product");
      ASSERT_NE(kernel, nullptr) << "onednn declined a bf16 product";
      std::vector<float> out_f32(m * n);
      std::vector<uint16_t> out_bf16(m * n);
      void* out = result == DType::kF32 ? static_cast<void*>(out_f32.data()) : static_cast<void*>(out_bf16.data());
      kernel->execute_allocating_workspace({a.data(), b.data()}, {out});
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double expected = 0;
          for (int64_t p = 0; p < k; ++p) expected += a_values[i * k + p] * b_values[p * n + j];
          const double got = result == DType::kF32 ? out_f32[i * n + j]
                                                   : std::bit_cast<float>(static_cast<uint32_t>(out_bf16[i * n + j]) << 16);
          EXPECT_EQ(got, expected) << i << "," << j;
        }
    }
  }
}
#endif

// The backend of each kernel step of `program`'s forward pass on `backends` ("prim@backend" when
// `named`), in step order.
std::vector<std::string> forward_kernels(const Program& program, const std::vector<std::string>& backends, bool named = false) {
  const Linearization lin = linearize_with(program);
  const StepProgram forward = build_step_program(lin, BackendOptions{backends, &default_plugins()}, Pass::kForward,
                                                 InputMode::kLoadedEachRun);
  std::vector<std::string> steps;
  for (const Step& step : forward.steps())
    if (step.kind == StepKind::kKernel)
      steps.push_back((named ? std::string(prim_name(lin.graph.eqns[step.equation].prim)) + "@" : std::string()) +
                      step.kernel->backend());
  return steps;
}

TEST(BackendInstance, OneDnnRunsProductsWhoseDimGroupsAreStrided) {
  // Activations [B, S, D] times weights, their gradient over (B, S), attention batched over (B, H):
  // each operand's batch, free and contracted dims read as one strided dim, so oneDNN takes them;
  // so does attention's p v with v still [B, S, H, Dh], its batch dims B and H each a dim of their
  // own; contracted dims in an order memory does not have do not, and go to the next backend.
  const Program program = parse_program(R"({ lambda ; a:f32[2,3,4] w:f32[4,5] c:f32[2,3,5] q:f32[2,3,4,5] k:f32[2,3,6,5] p:f32[2,4,6,6] v:f32[2,6,4,5]. let
      d:f32[2,3,5] = dot_general[dimension_numbers=(([2], [0]), ([], []))] a w
      g:f32[4,5] = dot_general[dimension_numbers=(([0, 1], [0, 1]), ([], []))] a c
      s:f32[2,3,4,6] = dot_general[dimension_numbers=(([3], [3]), ([0, 1], [0, 1]))] q k
      x:f32[4,5] = dot_general[dimension_numbers=(([1, 0], [1, 0]), ([], []))] a c
      o:f32[2,4,6,5] = dot_general[dimension_numbers=(([3], [1]), ([0, 1], [0, 2]))] p v
    in (d, g, s, x, o) })", "products");
  const std::vector<std::string> installed = default_plugins().backend_names();
  if (std::find(installed.begin(), installed.end(), "onednn") == installed.end()) GTEST_SKIP() << "no onednn backend in this build";
  const std::vector<std::string> steps = forward_kernels(program, {"onednn", "reference"});
  EXPECT_EQ(steps, (std::vector<std::string>{"onednn", "onednn", "onednn", "reference", "onednn"}));
}

// oneDNN 2.6 runs some broadcasts with its reference implementation, hundreds of times slower than
// a jitted kernel: it declines those, and the next backend runs them ([B, H, S, S] by [B, 1, S, 1],
// whose dims alternate). A softmax's [B, H, S, S] by [B, H, S, 1] is [B*H*S, S] by [B*H*S, 1] with
// its dims collapsed, which oneDNN jits, so it stays on oneDNN, as [B, S, D] by [1, 1, D] does.
TEST(BackendSet, OneDnnDeclinesTheBroadcastsItWouldRunWithItsReferenceCode) {
  const std::vector<std::string> installed = default_plugins().backend_names();
  if (std::find(installed.begin(), installed.end(), "onednn") == installed.end()) GTEST_SKIP() << "no onednn backend in this build";
  const Program program = parse_program(R"({ lambda ; s:f32[2,4,32,32] m:f32[2,4,32,1] n:f32[2,1,32,1] x:f32[2,32,64] b:f32[1,1,64]. let
      d:f32[2,4,32,32] = sub s m
      e:f32[2,4,32,32] = sub s n
      y:f32[2,32,64] = add x b
    in (d, e, y) })", "softmax");
  const std::vector<std::string> steps = forward_kernels(program, {"onednn", "reference"});
  EXPECT_EQ(steps, (std::vector<std::string>{"onednn", "reference", "onednn"}));
}

// The layout ops of a gpt's attention run on Highway, not the reference backend: the qkv split,
// its transpose's pad, the causal mask's iotas and its broadcasts of bool and i32, and dropout's
// bits (random_fold_in and random_bits on threefry keys).
TEST(BackendSet, HighwayRunsTheLayoutOpsOfAnAttentionBlock) {
  if (!backend_installed("highway")) GTEST_SKIP() << "the highway backend is not built";
  const Program program = parse_program(R"({ lambda ; u:f32[2,8,12] b:bool[8,8] key:key<fry>[]. let
      q:f32[2,8,4] k:f32[2,8,8] = split[axis=2 sizes=(4, 8)] u
      g:f32[2,8,12] = pad[padding_config=((0, 0, 0), (0, 0, 0), (4, 0, 0))] k 0.0:f32[]
      i:i32[8,8] = iota[dimension=0 dtype=int32 shape=(8, 8)]
      m:bool[2,8,8] = broadcast_in_dim[shape=(2, 8, 8) broadcast_dimensions=(1, 2)] b
      n:i32[2,8,8] = broadcast_in_dim[shape=(2, 8, 8) broadcast_dimensions=(1, 2)] i
      d:key<fry>[] = random_fold_in key 3:u32[]
      r:u32[2,8,8] = random_bits[bit_width=32 shape=(2, 8, 8)] d
    in (q, g, m, n, r) })", "attention");
  const std::vector<std::string> steps = forward_kernels(program, {"highway", "reference"}, true);
  EXPECT_EQ(steps, (std::vector<std::string>{"split@highway", "split@highway", "pad@highway", "iota@highway",
                                             "broadcast_in_dim@highway", "broadcast_in_dim@highway",
                                             "random_fold_in@highway", "random_bits@highway"}))
      << ::testing::PrintToString(steps);
}

TEST(BackendSet, UnsupportedOrUnknownBackendsAreNamed) {
  const Program program = parse_program("{ lambda ; a:f32[2]. let b:f32[2] = sin a in (b,) }", "p");
  const Linearization lin = linearize_with(program);
  try {
    run_forward(lin, {}, {Tensor::filled(Type{DType::kF32, {2}, MemorySpace::kDevice}, 1.0)},
                BackendOptions{{"gpu"}, &default_plugins()});
    FAIL();
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("unknown backend 'gpu' (available: ", 0), 0u) << message;
    EXPECT_NE(message.find("reference"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace rematkit::testing
