// What the backward pass keeps for small programs of one primitive each, worked out by hand from
// the primitive's JVP rule in JAX (jax/_src/lax/lax.py, slicing.py and special.py): the residuals are the
// known values that the rule's tangent equations read, in the order the rule computes them.
#include <gtest/gtest.h>

#include <regex>

#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

struct ResidualRule {
  const char* name;
  const char* program;
  std::vector<std::string> expected;  // report lines without " from FILE:LINE"
};

void PrintTo(const ResidualRule& r, std::ostream* os) { *os << r.name; }

const ResidualRule kRules[] = {
    // erf: 2/sqrt(pi) * (g * exp(-x^2)). square, neg and exp are known; the tangent's mul reads exp.
    {"erf", "{ lambda ; x:f32[4]. let y:f32[4] = erf x in (y,) }", {"f32[4] output of exp"}},
    // erf_inv: sqrt(pi)/2 * (g * exp(ans^2)): the exp of the squared answer.
    // erfc: -2/sqrt(pi) * (g * exp(-x^2)): the exp, as erf's.
    {"erfc", "{ lambda ; x:f32[4]. let y:f32[4] = erfc x in (y,) }", {"f32[4] output of exp"}},
    {"erf_inv", "{ lambda ; x:f32[4]. let y:f32[4] = erf_inv x in (y,) }", {"f32[4] output of exp"}},
    // tan: g * (1 + ans^2): the add.
    {"tan", "{ lambda ; x:f32[4]. let y:f32[4] = tan x in (y,) }", {"f32[4] output of add"}},
    // exp2: ln 2 * (g * ans), ln 2 a constant of the rule: the answer itself.
    {"exp2", "{ lambda ; x:f32[4]. let y:f32[4] = exp2 x in (y,) }", {"f32[4] output of exp2"}},
    // expm1: g * (ans + 1), log1p: g / (x + 1): the add each.
    {"expm1", "{ lambda ; x:f32[4]. let y:f32[4] = expm1 x in (y,) }", {"f32[4] output of add"}},
    {"log1p", "{ lambda ; x:f32[4]. let y:f32[4] = log1p x in (y,) }", {"f32[4] output of add"}},
    // abs: select(x >= 0, g, -g): the mask.
    {"abs", "{ lambda ; x:f32[4]. let y:f32[4] = abs x in (y,) }", {"bool[4] output of ge"}},
    // floor has a zero tangent: mul(floor x, x)'s tangent is floor(x) * tx, which keeps floor's output.
    {"floor_zero_tangent", "{ lambda ; x:f32[4]. let y:f32[4] = floor x; z:f32[4] = mul y x in (z,) }",
     {"f32[4] output of floor"}},
    // atan2(x, y): g * y / (x^2 + y^2) and g * -x / (x^2 + y^2), each rule computing its own sum:
    // the two divs, the first operand's first.
    {"atan2", "{ lambda ; x:f32[4] y:f32[4]. let z:f32[4] = atan2 x y in (z,) }",
     {"f32[4] output of div", "f32[4] output of div"}},
    // rem(x, y): g for x; -g * (sign(x / y) * floor(|x / y|)) for y: the mul of sign and floor.
    {"rem", "{ lambda ; x:f32[4] y:f32[4]. let z:f32[4] = rem x y in (z,) }", {"f32[4] output of mul"}},
    // pow(x, y), y floating: g * (y * pow(x, y - 1)) and g * (log(replace_zero(x)) * ans): two muls.
    {"pow", "{ lambda ; x:f32[4] y:f32[4]. let z:f32[4] = pow x y in (z,) }",
     {"f32[4] output of mul", "f32[4] output of mul"}},
    // pow(x, n), n an integer: g * select(n == 0, zeros, replace_zero(n) * pow(x, n - 1)): the select.
    {"pow_integer_exponent", "{ lambda ; x:f32[4] n:i32[4]. let z:f32[4] = pow x n in (z,) }",
     {"f32[4] output of select_n"}},
    // clamp(lo, x, hi) with literal bounds: select(x > lo and x < hi, g, zeros_like(x)): the mask and,
    // as with relu, the zeros the tangent's select reads.
    {"clamp", "{ lambda ; x:f32[4]. let z:f32[4] = clamp -1.0:f32[] x 1.0:f32[] in (z,) }",
     {"bool[4] output of and", "f32[4] output of broadcast_in_dim"}},
    // add_any is linear: nothing.
    {"add_any", "{ lambda ; x:f32[4] y:f32[4]. let z:f32[4] = add_any x y in (z,) }", {}},
    // integer_pow[y=1]'s tangent is g itself (lax._integer_pow_jvp): only sin's cos is kept.
    {"integer_pow_one", "{ lambda ; x:f32[4]. let y:f32[4] = integer_pow[y=1] x; z:f32[4] = sin y in (z,) }",
     {"f32[4] output of cos"}},
    // reduce_min, like reduce_max (lax._reduce_chooser_jvp_rule): the 0/1 locations of the minimum,
    // converted to f32, and their count per row; the tangent's mul reads one, its div the other.
    {"reduce_min", "{ lambda ; x:f32[3,4]. let y:f32[3] = reduce_min[axes=(1,)] x in (y,) }",
     {"f32[3,4] output of convert_element_type", "f32[3] output of reduce_sum"}},
    // slice, rev, copy, cumsum, reduce_precision, pad with a literal value and concatenate are
    // linear: nothing.
    {"linear_layout_ops", "{ lambda ; x:f32[4,6]. let a:f32[2,3] = slice[limit_indices=(4, 6) start_indices=(0, 0) "
                          "strides=(2, 2)] x; b:f32[2,3] = rev[dimensions=(1,)] a; c:f32[2,3] = copy b; "
                          "d:f32[2,3] = cumsum[axis=1 reverse=True] c; e:f32[2,3] = reduce_precision[exponent_bits=8 "
                          "mantissa_bits=7] d; f:f32[3,3] = pad[padding_config=((1, 0, 0), (0, 0, 0))] e 0.0:f32[]; "
                          "g:f32[3,6] = concatenate[dimension=1] f f in (g,) }",
     {}},
    // dynamic_slice's tangent is sliced at the same start index: the index argument is kept.
    {"dynamic_slice_index", "{ lambda ; x:f32[6] i:i32[]. let y:f32[2] = dynamic_slice[slice_sizes=(2,)] x i in (y,) }",
     {"i32[] from the argument i"}},
    // dynamic_update_slice with an update that has no tangent (an iota): the JVP instantiates its
    // zero tangent, a known broadcast the tangent equation reads.
    {"dynamic_update_slice_zero_update", "{ lambda ; x:f32[6]. let u:f32[2] = iota[dimension=0 dtype=float32 "
                                         "shape=(2,) sharding=None]; y:f32[6] = dynamic_update_slice x u 1:i32[] in (y,) }",
     {"f32[2] output of broadcast_in_dim"}},
    // pad (ad.deflinear2) with an operand that has no tangent and a differentiated padding value:
    // the operand's zeros are kept.
    {"pad_zero_operand", "{ lambda ; v:f32[]. let x:f32[3] = iota[dimension=0 dtype=float32 shape=(3,) sharding=None]; "
                         "y:f32[5] = pad[padding_config=((1, 1, 0),)] x v in (y,) }",
     {"f32[3] output of broadcast_in_dim"}},
    // gather is linear in the table (slicing._gather_jvp_rule): its tangent gathers at the same
    // indices, so the indices are kept, here the broadcast that shapes them.
    {"gather_embedding", "{ lambda ; a:f32[10,8] b:i32[4]. let f:i32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,) "
                         "shape=(4, 1) sharding=None] b; g:f32[4,8] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None "
                         "mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(1, 8)] a f in (g,) }",
     {"i32[4,1] output of broadcast_in_dim"}},
    // reduce_prod of 3 elements (lax._reduce_prod_jvp_rule's tree): rows [x0, x1] and [x2] padded
    // with a 1; their product's halves [x0 x2] and [x1]. Each level's mul tangent reads both halves:
    // the slice and the pad, then the two slices of the product.
    {"reduce_prod", "{ lambda ; x:f32[3]. let y:f32[] = reduce_prod[axes=(0,)] x in (y,) }",
     {"f32[2] output of slice", "f32[2] output of pad", "f32[1] output of slice", "f32[1] output of slice"}},
    // sort (lax._sort_jvp): the tangent is gathered by the permutation, the sort of an iota with the
    // operand, expanded to u32[5,1] as the gather's index: the one residual.
    {"sort", "{ lambda ; x:f32[5]. let y:f32[5] = sort[dimension=0 is_stable=True num_keys=1] x in (y,) }",
     {"u32[5,1] output of broadcast_in_dim"}},
    // cummax of two elements (loops.py: the JVP of associative_scan with lax.max): one combine of
    // [x0] and [x1], whose tangent weighs each side by _balanced_eq (a div each), then a combine of
    // two empty slices (the even positions past the first), whose two divs are empty.
    {"cummax", "{ lambda ; x:f32[2]. let y:f32[2] = cummax[axis=0 reverse=False] x in (y,) }",
     {"f32[1] output of div", "f32[1] output of div", "f32[0] output of div", "f32[0] output of div"}},
    // split is linear (lax.py: deflinear2): only sin's cos of the piece it reads.
    {"split", "{ lambda ; x:f32[5]. let a:f32[2] b:f32[3] = split[axis=0 sizes=(2, 3)] x; c:f32[3] = sin b in (c,) }",
     {"f32[3] output of cos"}},
    // Mixed precision: a bf16 product with an f32 result is bilinear, so its tangent reads both
    // operands as they are, bf16, at two bytes an element.
    {"dot_general_bf16_preferred_f32",
     "{ lambda ; x:bf16[4] w:f32[4,3]. let wb:bf16[4,3] = convert_element_type[new_dtype=bfloat16 weak_type=False] w; "
     "y:f32[3] = dot_general[dimension_numbers=(([0], [0]), ([], [])) preferred_element_type=float32] x wb in (y,) }",
     {"bf16[4] from the argument x", "bf16[4,3] output of convert_element_type"}},
    // scatter-add is linear in the operand and the updates: its tangent reads the indices argument.
    {"scatter_add", "{ lambda ; x:f32[10,8] i:i32[4,1] u:f32[4,8]. let s:f32[10,8] = scatter-add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) "
                    "mode=GatherScatterMode.FILL_OR_DROP] x i u in (s,) }",
     {"i32[4,1] from the argument i"}},
    // optimization_barrier is linear (lax._opt_barrier_jvp): sin's cos of the barrier's output is
    // all that is kept; bitcast_convert_type has a zero tangent.
    {"optimization_barrier", "{ lambda ; x:f32[4]. let y:f32[4] = optimization_barrier x; z:f32[4] = sin y in (z,) }",
     {"f32[4] output of cos"}},
};

class PrimitiveResidualTest : public ::testing::TestWithParam<ResidualRule> {};

TEST_P(PrimitiveResidualTest, KeepsWhatJaxsRuleReads) {
  const Program program = parse_program(GetParam().program, GetParam().name);
  std::vector<std::string> lines;
  static const std::regex suffix(R"( from [^ ]+:[0-9]+$)");
  for (const std::string& line : residual_lines(linearize_with(program))) lines.push_back(std::regex_replace(line, suffix, ""));
  EXPECT_EQ(lines, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Rules, PrimitiveResidualTest, ::testing::ValuesIn(kRules),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace rematkit::testing
