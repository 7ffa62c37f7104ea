// Gradients against central finite differences (f64 interpreter, independent of autodiff), and
// bit-identical across policies.
#include <gtest/gtest.h>

#include <cmath>

#include "rematkit/autodiff/gradient.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

struct GradCase {
  const char* name;
  const char* program;
  bool positive_inputs = false;  // for log, sqrt, rsqrt and negative powers
};

const GradCase kPrimitiveCases[] = {
    {"add_broadcast", "{ lambda ; a:f32[2,3] b:f32[1,3] c:f32[]. let d:f32[2,3] = add a b; e:f32[2,3] = add c d in (e,) }"},
    {"sub_scalar", "{ lambda ; a:f32[2,3] b:f32[]. let c:f32[2,3] = sub a b; d:f32[2,3] = sub b c in (d,) }"},
    {"mul", "{ lambda ; a:f32[2,3] b:f32[2,1]. let c:f32[2,3] = mul a b; d:f32[2,3] = mul c c in (d,) }"},
    {"div", "{ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = div a b in (c,) }", true},
    {"max_min", "{ lambda ; a:f32[5] b:f32[5]. let c:f32[5] = max a b; d:f32[5] = min a 0.1; e:f32[5] = mul c d in (e,) }"},
    {"neg_exp_log", "{ lambda ; a:f32[3]. let b:f32[3] = neg a; c:f32[3] = exp b; d:f32[3] = log a; e:f32[3] = add c d in (e,) }", true},
    {"sin_cos_tanh", "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = cos b; d:f32[3] = tanh c in (d,) }"},
    {"logistic", "{ lambda ; a:f32[3]. let b:f32[3] = logistic a in (b,) }"},
    {"sqrt_rsqrt", "{ lambda ; a:f32[3]. let b:f32[3] = sqrt a; c:f32[3] = rsqrt a; d:f32[3] = mul b c; e:f32[3] = add d b in (e,) }", true},
    {"square", "{ lambda ; a:f32[3]. let b:f32[3] = square a in (b,) }"},
    {"integer_pow", "{ lambda ; a:f32[3]. let b:f32[3] = integer_pow[y=3] a; c:f32[3] = integer_pow[y=-2] a; "
                    "d:f32[3] = integer_pow[y=1] a; e:f32[3] = integer_pow[y=0] a; f:f32[3] = integer_pow[y=2] a; "
                    "g:f32[3] = add b c; h:f32[3] = add g d; i:f32[3] = add h e; j:f32[3] = add i f in (j,) }", true},
    {"select_n_and_compare", "{ lambda ; a:f32[4] b:f32[4]. let p:bool[4] = lt a b; c:f32[4] = select_n p a b; "
                             "q:bool[4] = ne a 0.0; d:f32[4] = select_n q c a in (d,) }"},
    {"convert", "{ lambda ; a:f32[3]. let b:f32[3] = convert_element_type[new_dtype=float32] a; "
                "i:i32[3] = convert_element_type[new_dtype=int32] a; c:f32[3] = convert_element_type[new_dtype=float32] i; "
                "d:f32[3] = mul b c in (d,) }"},
    {"reduce_sum_and_broadcast", "{ lambda ; a:f32[2,3,4]. let b:f32[3] = reduce_sum[axes=(0, 2)] a; "
                                 "c:f32[2,3] = broadcast_in_dim[shape=(2, 3) broadcast_dimensions=(1,)] b; "
                                 "d:f32[2,3] = sin c in (d,) }"},
    {"broadcast_size_one", "{ lambda ; a:f32[1,3]. let b:f32[4,3] = broadcast_in_dim[shape=(4, 3) broadcast_dimensions=(0, 1)] a; "
                           "c:f32[4,3] = sin b in (c,) }"},
    {"reduce_max", "{ lambda ; a:f32[3,4]. let b:f32[3] = reduce_max[axes=(1,)] a; c:f32[3] = sin b in (c,) }"},
    {"reshape_transpose_squeeze", "{ lambda ; a:f32[2,3]. let b:f32[3,2] = transpose[permutation=(1, 0)] a; "
                                  "c:f32[1,6] = reshape[new_sizes=(1, 6) dimensions=None] b; d:f32[6] = squeeze[dimensions=(0,)] c; "
                                  "e:f32[6] = sin d in (e,) }"},
    {"name", "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = name[name=n] b; d:f32[3] = mul c a in (d,) }"},
    {"relu", "{ lambda ; a:f32[6]. let b:f32[6] = relu a; c:f32[6] = mul b a in (c,) }"},
    {"softmax", "{ lambda ; a:f32[2,3]. let b:f32[2,3] = softmax[axis=-1] a; c:f32[2,3] = softmax[axis=0] a; "
                "d:f32[2,3] = mul b c; e:f32[2,3] = sin d in (e,) }"},
    {"dot_matmul", "{ lambda ; a:f32[2,3] b:f32[3,4]. let c:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b; "
                   "d:f32[2,4] = sin c in (d,) }"},
    {"dot_transposed_operands", "{ lambda ; a:f32[3,2] b:f32[4,3]. let c:f32[2,4] = dot_general[dimension_numbers=(([0], [1]), ([], []))] a b; "
                                "d:f32[2,4] = sin c in (d,) }"},
    {"dot_batched", "{ lambda ; a:f32[2,3,4] b:f32[2,4,5]. let c:f32[2,3,5] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b; "
                    "d:f32[2,3,5] = tanh c in (d,) }"},
    {"dot_batch_in_middle", "{ lambda ; a:f32[3,2,4] b:f32[4,5,2]. let c:f32[2,3,5] = dot_general[dimension_numbers=(([2], [0]), ([1], [2]))] a b; "
                            "d:f32[2,3,5] = sin c in (d,) }"},
    {"dot_two_contractions", "{ lambda ; a:f32[2,3,4] b:f32[4,5,3]. let c:f32[2,5] = dot_general[dimension_numbers=(([1, 2], [2, 0]), ([], []))] a b; "
                             "d:f32[2,5] = sin c in (d,) }"},
    {"exact_gelu_erfc", "{ lambda ; a:f32[4]. let b:f32[4] = neg a; c:f32[4] = mul b 0.7071067690849304:f32[]; "
                        "d:f32[4] = erfc c; e:f32[4] = mul 0.5:f32[] a; f:f32[4] = mul e d in (f,) }"},
    {"erf_erf_inv", "{ lambda ; a:f32[4]. let b:f32[4] = erf a; c:f32[4] = mul a 0.5:f32[]; d:f32[4] = erf_inv c; "
                    "e:f32[4] = mul b d in (e,) }"},
    {"tan_exp2_expm1_log1p", "{ lambda ; a:f32[4]. let b:f32[4] = tan a; c:f32[4] = exp2 a; d:f32[4] = expm1 a; "
                             "e:f32[4] = log1p a; f:f32[4] = mul b c; g:f32[4] = mul d e; h:f32[4] = add f g in (h,) }", true},
    {"abs_and_piecewise_constant", "{ lambda ; a:f32[6]. let b:f32[6] = abs a; c:f32[6] = floor a; d:f32[6] = sign a; "
                                   "e:f32[6] = round[rounding_method=1] a; f:f32[6] = ceil a; g:f32[6] = mul b c; "
                                   "h:f32[6] = mul d e; i:f32[6] = mul f a; j:f32[6] = add g h; k:f32[6] = add j i "
                                   "in (k,) }"},
    {"atan2", "{ lambda ; a:f32[5] b:f32[5]. let c:f32[5] = atan2 a b in (c,) }"},
    {"rem", "{ lambda ; a:f32[5] b:f32[5]. let c:f32[5] = rem a b in (c,) }", true},
    {"pow", "{ lambda ; a:f32[5] b:f32[5] n:i32[5]. let c:f32[5] = pow a b; d:f32[5] = pow a n; e:f32[5] = mul c d "
            "in (e,) }", true},
    // lax.clamp's JVP assumes lo <= hi (with lo > hi the result is hi everywhere, which its rules do
    // not say), so the bounds here stay apart: lo in +-[0.075, 0.3], hi at least 0.6.
    {"clamp", "{ lambda ; lo:f32[7] a:f32[7] hi:f32[]. let b:f32[7] = mul lo 0.25:f32[]; h:f32[] = abs hi; "
              "i:f32[] = add h 0.3:f32[]; c:f32[7] = clamp b a i; d:f32[7] = clamp -0.5:f32[] a 0.5:f32[]; "
              "e:f32[7] = mul c d in (e,) }"},
    {"add_any", "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = add_any a b; d:f32[3] = mul c a in (d,) }"},
    {"reduce_min_and_argmax", "{ lambda ; a:f32[3,4]. let b:f32[3] = reduce_min[axes=(1,)] a; "
                              "i:i32[3] = argmax[axes=(1,) index_dtype=int32] a; f:f32[3] = convert_element_type[new_dtype=float32] i; "
                              "c:f32[3] = sin b; d:f32[3] = mul c f in (d,) }"},
    {"cumsum", "{ lambda ; a:f32[2,5]. let b:f32[2,5] = cumsum[axis=1 reverse=False] a; "
               "c:f32[2,5] = cumsum[axis=0 reverse=True] a; d:f32[2,5] = mul b c in (d,) }"},
    // The iota operand has no tangent: concatenate's JVP instantiates zeros for it.
    {"concatenate", "{ lambda ; a:f32[2,3] b:f32[2,2]. let c:f32[2,5] = concatenate[dimension=1] a b; "
                    "i:f32[2,1] = iota[dimension=0 dtype=float32 shape=(2, 1) sharding=None]; "
                    "d:f32[2,6] = concatenate[dimension=1] i c; e:f32[2,6] = sin d in (e,) }"},
    {"slice", "{ lambda ; a:f32[5,7]. let b:f32[2,3] = slice[limit_indices=(4, 7) start_indices=(1, 0) strides=(2, 3)] a; "
              "c:f32[2,7] = slice[limit_indices=(5, 7) start_indices=(3, 0) strides=None] a; d:f32[2,3] = sin b; "
              "e:f32[2,7] = sin c in (d, e) }"},
    {"dynamic_slice", "{ lambda ; a:f32[6,4] i:i32[]. let b:f32[2,3] = dynamic_slice[slice_sizes=(2, 3)] a i 1:i32[]; "
                      "c:f32[2,3] = sin b in (c,) }"},
    // Both operands, then each alone (an iota has no tangent: the JVP instantiates zeros for it).
    {"dynamic_update_slice", "{ lambda ; a:f32[6] u:f32[2]. let b:f32[6] = dynamic_update_slice a u 3:i32[]; "
                             "s:f32[2] = iota[dimension=0 dtype=float32 shape=(2,) sharding=None]; "
                             "c:f32[6] = dynamic_update_slice a s 1:i32[]; "
                             "z:f32[6] = iota[dimension=0 dtype=float32 shape=(6,) sharding=None]; "
                             "d:f32[6] = dynamic_update_slice z u 0:i32[]; e:f32[6] = mul b c; f:f32[6] = mul e d "
                             "in (f,) }"},
    {"pad", "{ lambda ; a:f32[3,4] v:f32[]. let b:f32[6,5] = pad[padding_config=((1, 0, 1), (2, -1, 0))] a v; "
            "c:f32[6,5] = sin b; d:f32[5,4] = pad[padding_config=((1, 1, 0), (0, 0, 0))] a 0.0:f32[]; "
            "e:f32[5,4] = cos d in (c, e) }"},
    {"rev_copy_reduce_precision", "{ lambda ; a:f32[2,3]. let b:f32[2,3] = rev[dimensions=(0, 1)] a; "
                                  "c:f32[2,3] = copy b; d:f32[2,3] = reduce_precision[exponent_bits=8 mantissa_bits=23] c; "
                                  "e:f32[2,3] = mul d a in (e,) }"},
    // Embedding rows 0, 1, 2, 0 (row 0 twice: its gradient adds up), and the same indices scattered back.
    {"gather_scatter_add", "{ lambda ; a:f32[3,2] u:f32[4,2]. let i:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) "
                           "sharding=None]; j:i32[4] = rem i 3:i32[]; k:i32[4,1] = broadcast_in_dim["
                           "broadcast_dimensions=(0,) shape=(4, 1) sharding=None] j; g:f32[4,2] = gather["
                           "dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None mode=GatherScatterMode.PROMISE_IN_BOUNDS "
                           "slice_sizes=(1, 2)] a k; h:f32[4,2] = sin g; s:f32[3,2] = scatter-add["
                           "dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) mode=GatherScatterMode.FILL_OR_DROP] a k u; "
                           "t:f32[3,2] = mul s s in (h, t) }"},
    // Rows -2, -1, 0, 1 with wrap_negative_indices: rows 1, 2, 0, 1; the transposed scatter-add wraps too.
    {"gather_wrap_negative_indices", "{ lambda ; a:f32[3,2]. let i:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) "
                                     "sharding=None]; j:i32[4] = sub i 2:i32[]; k:i32[4,1] = broadcast_in_dim["
                                     "broadcast_dimensions=(0,) shape=(4, 1) sharding=None] j; g:f32[4,2] = gather["
                                     "dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None mode=GatherScatterMode.PROMISE_IN_BOUNDS "
                                     "slice_sizes=(1, 2) wrap_negative_indices=True] a k; h:f32[4,2] = sin g in (h,) }"},
    {"optimization_barrier", "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] d:f32[3] = optimization_barrier a b; "
                             "e:f32[3] = sin c; f:f32[3] = mul e d in (f,) }"},
    // Mixed precision: f32 weights cast to bf16, a bf16 product kept in f32 and an f16 branch;
    // gradients come back in each argument's dtype.
    {"mixed_precision", "{ lambda ; w:f32[3,4] x:bf16[2,3] h:f16[2,4]. let wb:bf16[3,4] = convert_element_type["
                        "new_dtype=bfloat16 weak_type=False] w; y:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), "
                        "([], [])) preferred_element_type=float32] x wb; z:f32[2,4] = tanh y; hf:f32[2,4] = "
                        "convert_element_type[new_dtype=float32] h; s:f32[2,4] = mul z hf in (s,) }"},
    // JAX's tree of halves: 5 rows (odd: a padded row of ones), 2 and 3 elements along one axis.
    {"reduce_prod_two_axes", "{ lambda ; a:f32[5,3,2]. let b:f32[3] = reduce_prod[axes=(0, 2)] a in (b,) }"},
    {"reduce_prod_all", "{ lambda ; a:f32[3]. let b:f32[] = reduce_prod[axes=(0,)] a in (b,) }"},
    {"sort_vector", "{ lambda ; a:f32[5]. let b:f32[5] = sort[dimension=0 is_stable=True num_keys=1] a; "
                    "c:f32[5] = mul b 0.5:f32[]; d:f32[5] = sin c in (d,) }"},
    {"sort_rows_with_payload", "{ lambda ; a:f32[3,4] p:f32[3,4]. let b:f32[3,4] q:f32[3,4] = sort[dimension=1 "
                               "is_stable=True num_keys=1] a p; c:f32[3,4] = mul b q in (c,) }"},
    // loops.py's cumulative reductions through associative_scan's JVP: odd and even lengths, reversed.
    {"cumprod_cummax", "{ lambda ; a:f32[5,4]. let b:f32[5,4] = cumprod[axis=0 reverse=True] a; "
                       "c:f32[5,4] = cummax[axis=1 reverse=False] b in (c,) }"},
    {"cummin_cumlogsumexp", "{ lambda ; a:f32[4,5]. let b:f32[4,5] = cummin[axis=0 reverse=False] a; "
                            "c:f32[4,5] = cumlogsumexp[axis=1 reverse=True] b in (c,) }"},
    {"split", "{ lambda ; a:f32[5,2]. let b:f32[2,2] c:f32[3,2] = split[axis=0 sizes=(2, 3)] a; d:f32[2,2] = sin b; "
              "e:f32[3,2] = cos c in (d, e) }"},
    {"float64", "{ lambda ; a:f64[3]. let b:f64[3] = sin a; c:f64[3] = mul b a in (c,) }"},
    // conv_general_dilated: each transpose is itself a convolution (convolution.py), checked against finite differences.
    {"conv_nhwc_same", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w; d:f32[1,4,4,3] = sin c in (d,) }"},
    {"conv_strided_dilated_negative_padding", "{ lambda ; a:f32[2,2,6,7] w:f32[3,2,2,3]. let c:f32[2,3,3,2] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 0), (0, -1)) precision=None preferred_element_type=None rhs_dilation=(2, 1) window_strides=(2, 3)] a w; d:f32[2,3,3,2] = sin c in (d,) }"},
    {"conv_lhs_dilation", "{ lambda ; a:f32[1,2,3,3] w:f32[2,2,2,2]. let c:f32[1,2,6,2] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(2, 1) padding=((1, 1), (0, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w; d:f32[1,2,6,2] = sin c in (d,) }"},
    {"conv_feature_groups", "{ lambda ; a:f32[2,3,3,4] w:f32[2,2,2,6]. let c:f32[2,3,3,6] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=2 lhs_dilation=(1, 1) padding=((0, 1), (1, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w; d:f32[2,3,3,6] = sin c in (d,) }"},
    {"conv_batch_groups", "{ lambda ; a:f32[4,2,4,3] w:f32[4,2,2,2]. let c:f32[2,4,3,3] = conv_general_dilated[batch_group_count=2 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(1, 1) padding=((0, 0), (1, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w; d:f32[2,4,3,3] = sin c in (d,) }"},
    // Window reductions: a sum's transpose pads and sums; max and min go through select_and_gather_add, whose transpose is select_and_scatter_add.
    {"reduce_window_sum", "{ lambda ; x:f32[5,6]. let s:f32[5,4] = reduce_window_sum[base_dilation=(1, 1) padding=((1, 0), (1, 2)) window_dilation=(1, 1) window_dimensions=(2, 3) window_strides=(1, 2)] x; t:f32[9,2] = reduce_window_sum[base_dilation=(2, 1) padding=((0, 1), (0, 0)) window_dilation=(1, 2) window_dimensions=(2, 2) window_strides=(1, 3)] x; u:f32[5,4] = sin s; v:f32[9,2] = sin t in (u, v) }"},
    {"reduce_window_max_min", "{ lambda ; x:f32[2,6,5,3]. let m:f32[2,3,3,3] = reduce_window_max[base_dilation=(1, 1, 1, 1) padding=((0, 0), (0, 0), (1, 0), (0, 0)) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 2, 2, 1) window_strides=(1, 2, 2, 1)] x; n:f32[2,4,3,3] = reduce_window_min[base_dilation=(1, 1, 1, 1) padding=((0, 0), (0, 0), (1, 1), (0, 0)) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 3, 3, 1) window_strides=(1, 1, 2, 1)] x; p:f32[2,3,3,3] = sin m; q:f32[2,4,3,3] = sin n in (p, q) }"},
    {"reduce_window_max_base_dilation", "{ lambda ; x:f32[4,3]. let m:f32[6,3] = reduce_window_max[base_dilation=(2, 1) padding=((0, 0), (1, 0)) window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(1, 1)] x; p:f32[6,3] = sin m in (p,) }"},
    {"select_and_scatter_gather_add", "{ lambda ; s:f32[3,3] t:f32[6,5] x:f32[6,5]. let u:f32[6,5] = select_and_scatter_add[padding=((0, 0), (1, 0)) select_prim=ge window_dimensions=(2, 2) window_strides=(2, 2)] s x; g:f32[3,3] = select_and_gather_add[base_dilation=(1, 1) padding=((0, 0), (1, 0)) select_prim=le window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)] t x; v:f32[6,5] = sin u; h:f32[3,3] = sin g in (v, h) }"},
    {"integer_pow_one", "{ lambda ; a:f32[3]. let b:f32[3] = integer_pow[y=1] a; c:f32[3] = sin b in (c,) }"},
    {"dot_vector", "{ lambda ; a:f32[4] b:f32[4]. let c:f32[] = dot_general[dimension_numbers=(([0], [0]), ([], []))] a b; "
                   "d:f32[] = sin c in (d,) }"},
    {"constants_and_integers", "{ lambda k:f32[3] ; a:f32[3] n:i32[3]. let b:f32[3] = mul a k; "
                               "m:f32[3] = convert_element_type[new_dtype=float32] n; c:f32[3] = mul b m in (c,) }"},
    {"two_outputs_and_reuse", "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b a; d:f32[] = reduce_sum[axes=(0,)] c in (d, b, a) }"},
    {"pjit_and_nested_checkpoint",
     "{ lambda ; a:f32[3] w:f32[3,3]. let b:f32[3] = pjit[name=f jaxpr={ lambda ; x:f32[3] v:f32[3,3]. let "
     "y:f32[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] v x; "
     "z:f32[3] = checkpoint[policy=nothing_saveable jaxpr={ lambda ; p:f32[3]. let q:f32[3] = sin p; "
     "r:f32[3] = checkpoint[policy=dots_saveable jaxpr={ lambda ; s:f32[3]. let t:f32[3] = cos s in (t,) }] q in (r,) }] y "
     "in (z,) }] a w in (b,) }"},
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

void expect_close(const Tensor& ad, const Tensor& fd, const std::string& what) {
  ASSERT_EQ(ad.data.size(), fd.data.size()) << what;
  for (size_t i = 0; i < ad.data.size(); ++i)
    EXPECT_NEAR(ad.data[i], fd.data[i], 1e-6 * (1 + std::fabs(fd.data[i]))) << what << " element " << i;
}

void check_against_finite_differences(const Program& program, bool positive, const std::string& policy) {
  for (unsigned seed : {1u, 2u}) {
    const RandomInputs in = random_inputs(program, seed, 0.3, 1.2, !positive);
    const GradientResult ad =
        interpret_gradient(linearize_with(program, policy), in.constants, in.arguments, Arithmetic::kFloat64);
    const std::vector<Tensor> fd = finite_difference_gradients(program, in);
    for (size_t a = 0; a < fd.size(); ++a) {
      if (!is_floating(program.vars[program.invars[a]].type.dtype)) {
        EXPECT_FALSE(ad.gradients[a].has_value());
        continue;
      }
      ASSERT_TRUE(ad.gradients[a].has_value());
      expect_close(*ad.gradients[a], fd[a], "argument " + program.vars[program.invars[a]].name);
    }
  }
}

class PrimitiveGradientTest : public ::testing::TestWithParam<GradCase> {};

TEST_P(PrimitiveGradientTest, MatchesFiniteDifferences) {
  const Program program = parse_program(GetParam().program, GetParam().name);
  check_against_finite_differences(program, GetParam().positive_inputs, "");
  check_against_finite_differences(program, GetParam().positive_inputs, "nothing_saveable");
}

INSTANTIATE_TEST_SUITE_P(Primitives, PrimitiveGradientTest, ::testing::ValuesIn(kPrimitiveCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Programs mixing primitives and checkpoints: every reference residual case.
class ProgramGradientTest : public ::testing::TestWithParam<ResidualCase> {};

TEST_P(ProgramGradientTest, MatchesFiniteDifferences) {
  check_against_finite_differences(load_program(GetParam().program_path), false, "");
}

const char* kPolicies[] = {
    "", "everything_saveable", "nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable",
    "offload_dot_with_no_batch_dims('device', 'pinned_host')", "save_cos_only", "save_mul_only",
    "save_any_names_but_these()", "save_from_both_policies(dots_saveable, save_cos_only)",
};

TEST_P(ProgramGradientTest, BitIdenticalAcrossPolicies) {
  const Program program = load_program(GetParam().program_path);
  const RandomInputs in = random_inputs(program, 7);
  const GradientResult baseline = interpret_gradient(linearize_with(program), in.constants, in.arguments, Arithmetic::kFloat32);
  for (const char* policy : kPolicies) {
    SCOPED_TRACE(policy);
    const Linearization lin = linearize_with(program, policy);
    const GradientResult r = interpret_gradient(lin, in.constants, in.arguments, Arithmetic::kFloat32);
    for (size_t i = 0; i < r.outputs.size(); ++i) EXPECT_EQ(r.outputs[i].data, baseline.outputs[i].data);
    for (size_t a = 0; a < r.gradients.size(); ++a) {
      ASSERT_EQ(r.gradients[a].has_value(), baseline.gradients[a].has_value());
      if (r.gradients[a]) {
        EXPECT_EQ(r.gradients[a]->data, baseline.gradients[a]->data);  // bitwise
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, ProgramGradientTest, ::testing::ValuesIn(residual_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Gradient, StopGradientBlocksTheGradient) {
  // Finite differences cannot see stop_gradient (it is the identity forward), so use the math:
  // d/da [stop_gradient(a) * a] = a.
  const Program p = parse_program(
      "{ lambda ; a:f32[3]. let b:f32[3] = stop_gradient a; c:f32[3] = mul b a in (c,) }", "p");
  const RandomInputs in = random_inputs(p, 3);
  const GradientResult r = interpret_gradient(linearize_with(p), in.constants, in.arguments, Arithmetic::kFloat64);
  ASSERT_TRUE(r.gradients[0].has_value());
  EXPECT_EQ(r.gradients[0]->data, in.arguments[0].data);
}

// lax._split_transpose_rule concatenates the pieces' cotangents, zeros for a piece nothing reads:
// one concatenate in the backward pass, no pads. d/dx [sum(a * w) + sum(c)] is w, then 0 for b,
// then 1s; w[0] = -0.0 makes a[0]'s cotangent -0.0, which a concatenate keeps and padding with
// zeros and adding the pads would make +0.0.
TEST(Gradient, ASplitsPiecesCotangentsAreConcatenatedAsJaxDoes) {
  const Program p = parse_program(R"({ lambda ; x:f32[6] w:f32[2]. let
    a:f32[2] b:f32[1] c:f32[3] = split[axis=0 sizes=(2, 1, 3)] x
    d:f32[2] = mul a w
    e:f32[] = reduce_sum[axes=(0,)] d
    f:f32[] = reduce_sum[axes=(0,)] c
    g:f32[] = add e f
  in (g,) })", "split");
  const Linearization lin = linearize_with(p);
  size_t concatenates = 0, pads = 0;
  for (int e : lin.backward) {
    concatenates += lin.graph.eqns[static_cast<size_t>(e)].prim == Prim::kConcatenate;
    pads += lin.graph.eqns[static_cast<size_t>(e)].prim == Prim::kPad;
  }
  EXPECT_EQ(concatenates, 1u);
  EXPECT_EQ(pads, 0u);
  RandomInputs in = random_inputs(p, 5);
  in.arguments[1].data = {-0.0, 2.5};
  for (const char* backend : {"reference", "highway"}) {
    if (!backend_installed(backend)) continue;
    SCOPED_TRACE(backend);
    const GradientResult r = run_gradient(lin, in.constants, in.arguments, BackendOptions{{backend}, &default_plugins()});
    ASSERT_TRUE(r.gradients[0].has_value());
    EXPECT_EQ(r.gradients[0]->data, (std::vector<double>{-0.0, 2.5, 0.0, 1.0, 1.0, 1.0}));
    EXPECT_TRUE(std::signbit(r.gradients[0]->data[0]));
    EXPECT_FALSE(std::signbit(r.gradients[0]->data[2]));
  }
}

TEST(Remat, NothingSaveableRecomputesAndSavesOnlyInputs) {
  // jax.checkpoint docstring: sin(sin(x)) saves cos(x), cos(sin(x)) without remat and only x with it.
  const Program p = parse_program("{ lambda ; x:f32[]. let a:f32[] = sin x; b:f32[] = sin a in (b,) }", "p");
  const Linearization plain = linearize_with(p);
  const Linearization remat = linearize_with(p, "nothing_saveable");
  EXPECT_EQ(plain.residuals.size(), 2u);
  EXPECT_TRUE(plain.recomputed.empty());
  ASSERT_EQ(remat.residuals.size(), 1u);
  EXPECT_EQ(remat.graph.values[remat.residuals[0].value].origin, ValueOrigin::kArgument);
  // sin x, and the two cos coefficients, run again in the backward pass.
  EXPECT_EQ(remat.recomputed.size(), 3u);
}

TEST(Gradient, AWeightsGradientNeedsNoTranspose) {
  // d(x @ W)/dW = x^T ct: contracting x's batch dim with ct's lays the result out as W already is,
  // so the backward pass is two dot_generals and no transpose (JAX writes dot, then transpose).
  const Program p = parse_program(
      "{ lambda ; x:f32[2,3] w:f32[3,4]. let y:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w "
      "in (y,) }", "p");
  const Linearization lin = linearize_with(p);
  int dots = 0, transposes = 0;
  for (int e : lin.backward) {
    dots += lin.graph.eqns[e].prim == Prim::kDotGeneral;
    transposes += lin.graph.eqns[e].prim == Prim::kTranspose;
  }
  EXPECT_EQ(dots, 2);
  EXPECT_EQ(transposes, 0);
}

TEST(Gradient, DifferentiatesOnlyTheArgumentsAsked) {
  // jax.grad(f, argnums=1) of sin(x) @ w: no cotangent for x, so neither x's dot nor cos(x) is
  // computed or kept; w's gradient is that of the full linearization.
  const Program p = parse_program(
      "{ lambda ; x:f32[2,3] w:f32[3,4]. let s:f32[2,3] = sin x; "
      "y:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] s w in (y,) }", "p");
  LinearizeOptions options;
  options.policies = &test_policies();
  options.differentiate = {1};
  const Linearization only_w = linearize(p, options);
  const Linearization both = linearize_with(p);
  EXPECT_EQ(only_w.argument_tangents[0], kNoValue);
  EXPECT_EQ(only_w.gradients[0], kNoValue);
  EXPECT_EQ(only_w.residuals.size(), 1u);  // sin(x) alone; both keep cos(x) and w as well
  EXPECT_EQ(both.residuals.size(), 3u);
  const RandomInputs in = random_inputs(p, 5);
  const GradientResult a = interpret_gradient(only_w, in.constants, in.arguments, Arithmetic::kFloat64);
  const GradientResult b = interpret_gradient(both, in.constants, in.arguments, Arithmetic::kFloat64);
  EXPECT_FALSE(a.gradients[0].has_value());
  ASSERT_TRUE(a.gradients[1].has_value());
  EXPECT_EQ(a.gradients[1]->data, b.gradients[1]->data);

  options.differentiate = {2};
  EXPECT_THROW(linearize(p, options), Error);
}

}  // namespace
}  // namespace rematkit::testing
