// Bad programs give one-line errors that name the problem and its line and column.
#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

struct BadProgram {
  const char* what;
  const char* text;
  const char* expected;  // the whole message, FILE:LINE:COL included
};

const BadProgram kBadPrograms[] = {
    {"empty", "", "p:1:1: empty program: no jaxpr found"},
    {"comments only", "# nothing\n", "p:2:1: empty program: no jaxpr found"},
    {"unknown primitive", "{ lambda ; x:f32[]. let\n  y:f32[] = frobnicate x in (y,) }",
     "p:2:13: unknown primitive 'frobnicate'"},
    {"unknown primitive with params we cannot read", "{ lambda ; x:f32[]. let\n  y:f32[] = frobnicate[branches=( {...} )] x in (y,) }",
     "p:2:13: unknown primitive 'frobnicate'"},
    {"undefined variable", "{ lambda ; x:f32[]. let y:f32[] = sin q in (y,) }", "p:1:39: undefined variable 'q'"},
    {"redefined variable", "{ lambda ; x:f32[]. let x:f32[] = sin x in (x,) }", "p:1:25: variable 'x' is defined twice"},
    {"shape mismatch", "{ lambda ; a:f32[2] b:f32[3]. let c:f32[2] = add a b in (c,) }",
     "p:1:46: add operand shapes do not match: f32[2], f32[3]"},
    {"wrong declared type", "{ lambda ; a:f32[2]. let c:f32[3] = sin a in (c,) }",
     "p:1:37: sin of f32[2] computes f32[2] but 'c' is declared f32[3]"},
    {"dot_general contraction sizes",
     "{ lambda ; a:f32[2,3] b:f32[4,2]. let\n c:f32[2,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b in (c,) }",
     "p:2:15: dot_general contracting dimensions differ in size: lhs dim 1 is 3, rhs dim 0 is 4"},
    {"unsupported dtype", "{ lambda ; x:f8_e5m2[2]. let y:f8_e5m2[2] = sin x in (y,) }",
     "p:1:14: unsupported dtype 'f8_e5m2' (rematkit supports f32, bf16, f16, f64, c64, c128, i8, i32, i64, u8, u32, bool and key<fry>)"},
    {"PRNG key dtype", "{ lambda ; k:key<rbg>[]. let in (k,) }",
     "p:1:14: unsupported dtype 'key<rbg>' (rematkit supports f32, bf16, f16, f64, c64, c128, i8, i32, i64, u8, u32, bool and key<fry>)"},
    {"split sizes", "{ lambda ; a:f32[5]. let b:f32[2] c:f32[2] = split[axis=0 sizes=(2, 2)] a in (b, c) }",
     "p:1:46: split: sizes add up to 4, not axis 0's 5 in f32[5]"},
    {"mismatched dtypes", "{ lambda ; x:bf16[2] y:f32[2]. let z:f32[2] = add x y in (z,) }",
     "p:1:47: add operands differ in dtype: bf16[2], f32[2]"},
    {"preferred_element_type of another kind",
     "{ lambda ; a:bf16[2,3] b:bf16[3]. let\n c:i32[2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) "
     "preferred_element_type=int32] a b in (c,) }",
     "p:2:13: dot_general's preferred_element_type int32 is not of the operands' kind: bf16[2,3], bf16[3]"},
    {"untyped binder", "{ lambda ; a. let b = sin a in (b,) }",
     "p:1:12: binder 'a' has no type (JAX before 0.2.22 printed none): give it with --arg-types a:f32[3],... or write "
     "it as a:f32[...]"},
    {"untyped scan outputs", "{ lambda ; a:f32[2]. let\n b = scan[jaxpr={ lambda ; c:f32[2]. let in (c,) } length=1 "
     "linear=(False,) num_carry=1 num_consts=0 reverse=False unroll=1] a in (b,) }",
     "p:2:6: scan's outputs have no types, which rematkit cannot work out for scan, cond or while: write them as NAME:TYPE"},
    {"untyped broadcast_in_dim without shape", "{ lambda ; a:f32[]. let b = broadcast_in_dim a in (b,) }",
     "p:1:29: broadcast_in_dim has no shape= and its output no type"},
    {"a problem inside remat_call's call_jaxpr is reported where it is",
     "{ lambda ; x:f32[]. let\n y:f32[] = remat_call[call_jaxpr={ lambda ; a:f32[]. let b:f32[] = frob a in (b,) } name=f] x in (y,) }",
     "p:2:68: unknown primitive 'frob'"},
    {"a problem inside xla_call's call_jaxpr is reported where it is",
     "{ lambda ; x:f32[]. let\n y:f32[] = xla_call[call_jaxpr={ lambda ; a:f32[]. let b:f32[3] = sin a in (b,) } name=f] x in (y,) }",
     "p:2:67: sin of f32[] computes f32[] but 'b' is declared f32[3]"},
    {"a sharded dim without its mesh axis", "{ lambda ; a:f32[8@,4]. let in (a,) }",
     "p:1:20: expected a mesh axis name, found ','"},
    {"sharding marks not closed", "{ lambda ; a:f32[8]{V:i. let in (a,) }",
     "p:1:24: expected ',' or '}' in a sharding annotation, found '.'"},
    // As jax-v0.4.30's tests/dynamic_api_test.py prints make_jaxpr(f, abstracted_axes={0: 'n'}).
    {"dynamic shape", "{ lambda ; a:i32[] b:i32[a] c:f32[a,4]. let  in (b,) }",
     "p:1:26: dynamic shapes (JAX's abstracted axes, 0.2.28-0.8.1) are not supported: the size 'a' is a variable; "
     "print the jaxpr with concrete sizes (no abstracted_axes)"},
    {"a primitive of some JAX versions names them", "{ lambda ; x:f32[]. let\n  y:f32[] = xmap[axis_resources=()] x in (y,) }",
     "p:2:13: unknown primitive 'xmap' (jax.experimental.maps.xmap, JAX 0.2.7-0.4.30)"},
    // A lu.WrappedFun param prints as its multi-line repr (jax/_src/linear_util.py WrappedFun.__repr__,
    // "Wrapped function:\n<transforms>\nCore: NAME\n"): custom_vjp_call_jaxpr's bwd as JAX 0.2.22-0.4.4 prints
    // it (jax-v0.3.16 jax/interpreters/partial_eval.py, DynamicJaxprTrace.process_custom_vjp_call; params
    // sorted by core.pp_eqn), and custom_jvp_call's jvp_jaxpr_fun as JAX 0.5.1-0.6.0 does (jax-v0.6.0
    // jax/_src/interpreters/partial_eval.py: lu.wrap_init of the memoized thunk, no transforms).
    {"custom_vjp_call_jaxpr's bwd", "{ lambda ; a:f32[4]. let\n  b:f32[4] = custom_vjp_call_jaxpr[\n    bwd=Wrapped "
     "function:\n0   : _flatten_bwd   (PyTreeDef((*,)), (ShapedArray(float32[4]),))\nCore: g_bwd\n\n"
     "    fun_jaxpr={ lambda ; c:f32[4]. let d:f32[4] = sin c in (d,) }\n"
     "    fwd_jaxpr_thunk=<function _memoize.<locals>.memoized at 0x7f3b2c1d5e50>\n    num_consts=0\n"
     "    out_trees=<function transformation_with_aux.<locals>.<lambda> at 0x7f3b2c1d5f70>\n  ] a\n in (b,) }",
     "p:3:9: bwd= is a Python function printed as its repr ('Wrapped function: .. Core: NAME', several lines), as "
     "JAX 0.2.4-0.6.0 prints custom_vjp_call_jaxpr's bwd and 0.5.1-0.6.0 custom_jvp_call's jvp_jaxpr_fun; rematkit "
     "does not read it: print the program with JAX 0.6.1 or later, which writes the function's name"},
    {"custom_jvp_call's jvp_jaxpr_fun", "{ lambda ; a:f32[4]. let\n  b:f32[4] = custom_jvp_call[\n"
     "    call_jaxpr={ lambda ; c:f32[4]. let d:f32[4] = sin c in (d,) }\n"
     "    jvp_jaxpr_fun=Wrapped function:\n\nCore: memoized\n\n    num_consts=0\n    symbolic_zeros=False\n  ] a\n in (b,) }",
     "p:4:19: jvp_jaxpr_fun= is a Python function printed as its repr ('Wrapped function: .. Core: NAME', several "
     "lines), as JAX 0.2.4-0.6.0 prints custom_vjp_call_jaxpr's bwd and 0.5.1-0.6.0 custom_jvp_call's "
     "jvp_jaxpr_fun; rematkit does not read it: print the program with JAX 0.6.1 or later, which writes the "
     "function's name"},
    // jax_remat3's hijax forms (ad_checkpoint.py, hijax.py): CustomRemat's rules print as Python objects.
    {"custom_remat", "{ lambda ; x:f32[3]. let\n y:f32[3] = call_hi_primitive[\n  _prim=CustomRemat[{'jaxpr': "
     "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }, 'f1': <function <lambda> at 0xXXXXXXXXXXXX>}]\n ] x in (y,) }",
     "p:3:9: call_hi_primitive of CustomRemat is not supported: jax.custom_remat (jax_remat3, JAX 0.10.2 on) prints "
     "its fwd, rem and bwd rules as Python objects, not jaxprs, so the program does not carry the rules its gradient uses"},
    {"another hijax primitive", "{ lambda ; x:f32[1]. let\n y:f32[1] = call_hi_primitive[_prim=CustomVJPTraced] x in (y,) }",
     "p:2:37: call_hi_primitive of CustomVJPTraced is not supported: rematkit reads only jax_remat3's RematTraced and "
     "CheckpointName of JAX's hijax primitives (0.8.0 on)"},
    {"RematTraced without its jaxpr", "{ lambda ; x:f32[3]. let\n y:f32[3] = call_hi_primitive[_prim=RematTraced[{'policy': None}]] x in (y,) }",
     "p:2:37: RematTraced has no 'jaxpr'"},
    {"RematTraced's params not a dict", "{ lambda ; x:f32[3]. let\n y:f32[3] = call_hi_primitive[_prim=RematTraced[{jaxpr: None}]] x in (y,) }",
     "p:2:50: expected a quoted key of RematTraced's params, found 'jaxpr'"},
    {"call_hi_primitive without _prim", "{ lambda ; x:f32[3]. let\n y:f32[3] = call_hi_primitive x in (y,) }",
     "p:2:13: call_hi_primitive has no [_prim=...]"},
    {"three-part header", "{ lambda  ;  ; a b.\n  let c = add a b\n  in [c] }",
     "p:1:14: a second ';' in a jaxpr's binders: JAX before 0.1.59 printed constants ; free variables ; arguments, "
     "which rematkit does not read (print it with a newer JAX)"},
    {"elided constant", "{ lambda ; x:f32[3]. let y:f32[3] = add x [...]:f32[3] in (y,) }",
     "p:1:43: elided constant '[...]' (print the jaxpr with its constants inlined)"},
    {"unknown policy", "{ lambda ; x:f32[]. let\n y:f32[] = checkpoint[jaxpr={ lambda ; a:f32[]. let b:f32[] = sin a in (b,) } "
     "policy=save_everything_please] x in (y,) }",
     "p:2:12: unknown policy 'save_everything_please'"},
    {"policy printed without arguments",
     "{ lambda ; x:f32[]. let\n y:f32[] = checkpoint[jaxpr={ lambda ; a:f32[]. let b:f32[] = sin a in (b,) } "
     "policy=<function save_only_these_names.<locals>.policy at 0x7f>] x in (y,) }",
     "p:2:12: the policy '<function save_only_these_names.<locals>.policy>' was printed without its arguments; "
     "write it as save_only_these_names('a') with the arguments it was made with"},
    {"checkpoint operand type",
     "{ lambda ; x:f32[2]. let\n y:f32[] = checkpoint[jaxpr={ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }] x in (y,) }",
     "p:2:12: operand 1 of checkpoint is f32[2] but its jaxpr's binder 'a' is f32[]"},
    {"erf of an integer", "{ lambda ; x:i32[2]. let y:i32[2] = erf x in (y,) }",
     "p:1:37: erf needs a floating operand, got i32[2]"},
    {"and of floats", "{ lambda ; x:f32[2]. let y:f32[2] = and x x in (y,) }",
     "p:1:37: and needs bool or integer operands, got f32[2]"},
    {"shift of bools", "{ lambda ; x:bool[2]. let y:bool[2] = shift_left x x in (y,) }",
     "p:1:39: shift_left needs integer operands, got bool[2]"},
    {"pow with a bool exponent", "{ lambda ; x:f32[2] n:bool[2]. let y:f32[2] = pow x n in (y,) }",
     "p:1:47: pow's exponent must have the base's dtype or an integer dtype: f32[2], bool[2]"},
    {"clamp bound shape", "{ lambda ; l:f32[3] x:f32[2]. let y:f32[2] = clamp l x 1.0:f32[] in (y,) }",
     "p:1:46: clamp's bounds must be scalars or the operand's shape: f32[3], f32[2], f32[]"},
    {"round's rounding method", "{ lambda ; x:f32[2]. let y:f32[2] = round[rounding_method=7] x in (y,) }",
     "p:1:37: rounding_method must be 0 or 1 (RoundingMethod.AWAY_FROM_ZERO or TO_NEAREST_EVEN), got 7"},
    {"clamp operand count", "{ lambda ; x:f32[2]. let y:f32[2] = clamp x x in (y,) }",
     "p:1:37: clamp takes 3 operand(s), got 2"},
    {"slice past the end", "{ lambda ; x:f32[4]. let y:f32[3] = slice[limit_indices=(5,) start_indices=(2,) strides=None] x in (y,) }",
     "p:1:37: slice: dim 0 needs 0 <= start <= limit <= 4 and a positive stride, got start 2, limit 5, stride 1"},
    {"slice stride zero", "{ lambda ; x:f32[4]. let y:f32[2] = slice[limit_indices=(4,) start_indices=(0,) strides=(0,)] x in (y,) }",
     "p:1:37: slice: dim 0 needs 0 <= start <= limit <= 4 and a positive stride, got start 0, limit 4, stride 0"},
    {"pad config length", "{ lambda ; x:f32[4,2]. let y:f32[6] = pad[padding_config=((1, 1, 0),)] x 0.0:f32[] in (y,) }",
     "p:1:39: pad: padding_config has 1 entries for f32[4,2]"},
    {"pad config shape", "{ lambda ; x:f32[4]. let y:f32[6] = pad[padding_config=((1, 1),)] x 0.0:f32[] in (y,) }",
     "p:1:37: padding_config must be ((low, high, interior), ...), got ((1, 1),)"},
    {"pad value not scalar", "{ lambda ; x:f32[4] v:f32[1]. let y:f32[6] = pad[padding_config=((1, 1, 0),)] x v in (y,) }",
     "p:1:46: pad's padding value must be a scalar of the operand's dtype: f32[4], f32[1]"},
    {"dynamic_slice index count", "{ lambda ; x:f32[4,3] i:i32[]. let y:f32[2,3] = dynamic_slice[slice_sizes=(2, 3)] x i in (y,) }",
     "p:1:49: dynamic_slice needs 2 start indices, got 1: f32[4,3], i32[]"},
    {"dynamic_slice float index", "{ lambda ; x:f32[4] i:f32[]. let y:f32[2] = dynamic_slice[slice_sizes=(2,)] x i in (y,) }",
     "p:1:45: dynamic_slice's start indices must be integer scalars: f32[4], f32[]"},
    {"dynamic_update_slice too big", "{ lambda ; x:f32[2] u:f32[3]. let y:f32[2] = dynamic_update_slice x u 0:i32[] in (y,) }",
     "p:1:46: dynamic_update_slice: the update is larger than the operand: f32[2], f32[3], i32[]"},
    {"concatenate mismatch", "{ lambda ; a:f32[2,3] b:f32[3,3]. let c:f32[2,6] = concatenate[dimension=1] a b in (c,) }",
     "p:1:52: concatenate operands differ in a dimension other than 1: f32[2,3], f32[3,3]"},
    {"iota dimension", "{ lambda ; . let i:i32[3] = iota[dimension=1 dtype=int32 shape=(3,) sharding=None] in (i,) }",
     "p:1:29: iota: dimension 1 is out of range for shape [3]"},
    {"argmax two axes", "{ lambda ; x:f32[2,3]. let i:i32[] = argmax[axes=(0, 1) index_dtype=int32] x in (i,) }",
     "p:1:38: argmax takes exactly one axis"},
    {"cumsum reverse not a bool", "{ lambda ; x:f32[3]. let y:f32[3] = cumsum[axis=0 reverse=1] x in (y,) }",
     "p:1:37: parameter 'reverse' must be True or False, got 1"},
    {"reduce_precision bits", "{ lambda ; x:f32[3]. let y:f32[3] = reduce_precision[exponent_bits=0 mantissa_bits=7] x in (y,) }",
     "p:1:37: reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0"},
    {"gather with vmap's batching dims", "{ lambda ; x:f32[2,3] i:i32[2,1]. let y:f32[2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,), start_indices_batching_dims=(0,)) slice_sizes=(1, 1)] x i in (y,) }",
     "p:1:50: gather with operand_batching_dims (a batched form vmap makes) is not supported"},
    {"gather index vector", "{ lambda ; x:f32[2,3] i:i32[4,2]. let y:f32[4,3] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) slice_sizes=(1, 3)] x i in (y,) }",
     "p:1:52: gather: the index vector has 2 component(s) but 1 operand dim(s) are indexed"},
    {"gather one-hot mode", "{ lambda ; x:f32[2,3] i:i32[4,1]. let y:f32[4,3] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) mode=GatherScatterMode.ONE_HOT slice_sizes=(1, 3)] x i in (y,) }",
     "p:1:52: mode GatherScatterMode.ONE_HOT is not supported (GatherScatterMode.CLIP, FILL_OR_DROP or PROMISE_IN_BOUNDS)"},
    {"gather dims spelled as scatter's", "{ lambda ; x:f32[2,3] i:i32[4,1]. let y:f32[4,3] = gather[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,)) slice_sizes=(1, 3)] x i in (y,) }",
     "p:1:52: dimension_numbers must be GatherDimensionNumbers(offset_dims=(..), ...), got ScatterDimensionNumbers(update_window_dims=(1,))"},
    {"scatter-add float indices", "{ lambda ; x:f32[2,3] i:f32[4,1] u:f32[4,3]. let y:f32[2,3] = scatter-add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())] x i u in (y,) }",
     "p:1:63: scatter-add's indices must be integers with the index vector as their last dim, got f32[4,1]"},
    {"bitcast to another size", "{ lambda ; x:f32[2]. let y:bool[2] = bitcast_convert_type[new_dtype=bool] x in (y,) }",
     "p:1:38: bitcast_convert_type from f32 to bool changes the element size, which is not supported"},
    {"barrier outputs", "{ lambda ; x:f32[2] y:f32[2]. let a:f32[2] = optimization_barrier x y in (a,) }",
     "p:1:46: optimization_barrier of 2 operand(s) binds 1 output(s)"},
    {"conv spec repeats a dim", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 1), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:64: conv_general_dilated dimension_numbers' lhs_spec (0, 3, 1, 1) must name each dim of f32[1,4,4,2] once"},
    {"conv dims spelled as a tuple", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:64: dimension_numbers must be ConvDimensionNumbers(lhs_spec=(..), rhs_spec=(..), out_spec=(..)), got ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))"},
    {"conv dims without out_spec", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:64: ConvDimensionNumbers lacks out_spec: ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1))"},
    {"conv feature mismatch", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,4,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:64: conv_general_dilated lhs feature dimension size divided by feature_group_count must equal the rhs input feature dimension size, but 2 // 1 != 4."},
    {"conv feature groups", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=3 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:64: conv_general_dilated feature_group_count must divide lhs feature dimension size, but 3 does not divide 2."},
    {"conv both groups", "{ lambda ; a:f32[3,4,4,2] w:f32[3,3,1,6]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=3 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=2 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:64: At most one of batch_group_count and feature_group_count may be > 1, got batch_group_count=3 and feature_group_count=2"},
    {"conv padding triples", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1, 0), (1, 1, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:64: padding must be ((low, high), ...), got ((1, 1, 0), (1, 1, 0))"},
    {"conv strides per spatial dim", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1, 1)] a w in (c,) }",
     "p:1:64: conv_general_dilated window_strides has 3 entries for 2 spatial dim(s)"},
    {"conv declared shape", "{ lambda ; a:f32[1,4,4,2] w:f32[3,3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((0, 0), (0, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:64: conv_general_dilated of f32[1,4,4,2], f32[3,3,2,3] computes f32[1,2,2,3] but 'c' is declared f32[1,4,4,3]"},
    {"conv rank mismatch", "{ lambda ; a:f32[1,4,4,2] w:f32[3,2,3]. let c:f32[1,4,4,3] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a w in (c,) }",
     "p:1:62: conv_general_dilated lhs and rhs must have the same number of dimensions, but got f32[1,4,4,2] and f32[3,2,3]"},
    {"reduce_window rank", "{ lambda ; x:f32[4,4,2]. let y:f32[2,2] = reduce_window_max[base_dilation=(1, 1) padding=((0, 0), (0, 0)) window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)] x in (y,) }",
     "p:1:43: reduce_window_max got the wrong number of window_dimensions for operand: got operand shape [4,4,2] with window_dimensions (2, 2)"},
    {"reduce_window zero window", "{ lambda ; x:f32[4]. let y:f32[5] = reduce_window_sum[base_dilation=(1,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(0,) window_strides=(1,)] x in (y,) }",
     "p:1:37: reduce_window_sum window_dimensions must have every element be positive, got (0,)"},
    {"select_prim", "{ lambda ; t:f32[4] x:f32[4]. let y:f32[2] = select_and_gather_add[base_dilation=(1,) padding=((0, 0),) select_prim=gt window_dilation=(1,) window_dimensions=(2,) window_strides=(2,)] t x in (y,) }",
     "p:1:46: select_prim must be ge or le (a window's max or min), got gt"},
    {"select_and_scatter_add source", "{ lambda ; s:f32[3] x:f32[4]. let y:f32[4] = select_and_scatter_add[padding=((0, 0),) select_prim=ge window_dimensions=(2,) window_strides=(2,)] s x in (y,) }",
     "p:1:46: select_and_scatter_add's source must be f32[2], one value per window of f32[4], got f32[3]"},
    {"missing closing brace", "{ lambda ; x:f32[]. let y:f32[] = sin x in (y,)", "p:1:48: expected '}', found end of file"},
    {"two programs", "{ lambda ; x:f32[]. let in (x,) } { lambda ; x:f32[]. let in (x,) }",
     "p:1:35: unexpected '{' after the program: a file holds exactly one jaxpr"},
    {"stray character", "{ lambda ; x:f32[]. let y:f32[] = sin x in (y,) } $", "p:1:51: unexpected character '$'"},
};

void PrintTo(const BadProgram& b, std::ostream* os) { *os << b.what; }

class ParserErrorTest : public ::testing::TestWithParam<BadProgram> {};

TEST_P(ParserErrorTest, NamesProblemAndPlace) {
  const BadProgram& bad = GetParam();
  try {
    linearize_with(parse_program(bad.text, "p"));
    FAIL() << "accepted: " << bad.text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(std::string(e.what()), bad.expected);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Bad, ParserErrorTest, ::testing::ValuesIn(kBadPrograms));

TEST(ParserErrors, AnsiColourCodes) {
  try {
    parse_program("{ lambda ; x:f32[]. let\n \x1b[31my\x1b[0m:f32[] = sin x in (y,) }", "p");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("p:2: the program contains ANSI colour codes", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace rematkit::testing
