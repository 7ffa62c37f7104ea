// jax.random's primitives on threefry keys: known answers from JAX's own tests (tests/random_test.py,
// random_impl_test.py's threefry2x32 KAT vectors, the doctest of jax/_src/random/stateful_rng.py),
// the type rules of prng.py, and dropout: the mask is recomputed from the key under any policy, so
// gradients are bit-identical whatever the backward pass keeps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

using Values = std::vector<double>;

std::vector<Tensor> evaluate_f32(const std::string& text, std::vector<Tensor> args = {}) {
  return evaluate_program(parse_program(text, "test"), {}, args, Arithmetic::kFloat32);
}

TEST(Random, Threefry2x32KnownAnswers) {
  // random_impl_test.py test_threefry2x32_kat_vectors (Random123's vectors).
  auto out = evaluate_f32(R"({ lambda ; a:u32[3] b:u32[3] c:u32[3] d:u32[3]. let
      y1:u32[3] y2:u32[3] = threefry2x32 a b c d
    in (y1, y2) })",
                          {tensor_of({3}, {0, 4294967295.0, 0x13198A2E}, DType::kU32),
                           tensor_of({3}, {0, 4294967295.0, 0x03707344}, DType::kU32),
                           tensor_of({3}, {0, 4294967295.0, 0x243F6A88}, DType::kU32),
                           tensor_of({3}, {0, 4294967295.0, 0x85A308D3}, DType::kU32)});
  EXPECT_EQ(out[0].data, (Values{0x6B200159, 0x1CB996FC, 0xC4923A9C}));
  EXPECT_EQ(out[1].data, (Values{0x99BA4EFE, 0xBB002BE7, 0x483DF7A0}));
}

TEST(Random, SeedSplitFoldInAndBitsAsJaxComputesThem) {
  // key(0) is [0, 0]; a negative i32 seed keeps its 32 bits. split(key(0), 2)[i] == fold_in(key(0), i)
  // with partitionable counters (the doctest's [1797259609, 2579123966] and [928981903, 3453687069]);
  // fold_in(key(0), 4) is random_test.py's [2285895361, 433833334].
  auto out = evaluate_f32(R"({ lambda ; . let
      k:key<fry>[] = random_seed[impl=fry] 0:i32[]
      kd:u32[2] = random_unwrap k
      n:key<fry>[] = random_seed[impl=fry] -1:i32[]
      nd:u32[2] = random_unwrap n
      s:key<fry>[2] = random_split[shape=(2,)] k
      sd:u32[2,2] = random_unwrap s
      f:key<fry>[] = random_fold_in k 4:u32[]
      fd:u32[2] = random_unwrap f
      b:u32[4] = random_bits[bit_width=32 shape=(4,)] k
    in (kd, nd, sd, fd, b) })");
  EXPECT_EQ(out[0].data, (Values{0, 0}));
  EXPECT_EQ(out[1].data, (Values{0, 4294967295.0}));
  EXPECT_EQ(out[2].data, (Values{1797259609, 2579123966.0, 928981903, 3453687069.0}));
  EXPECT_EQ(out[3].data, (Values{2285895361.0, 433833334}));
  // bits(key(0), (4,)): element i is the xor of threefry(key, (0, i)); the words below are worked
  // out from the KAT-checked hash, and element 0 is the xor of split's first key.
  EXPECT_EQ(out[4].data[0], static_cast<double>(1797259609u ^ 2579123966u));
  EXPECT_EQ(out[4].data, (Values{4070199207.0, 4202968722.0, 1427181096, 2012915765}));
}

TEST(Random, WrapUnwrapAndEightBitBits) {
  // A raw PRNGKey(0), u32[2], wrapped: the same key as random_seed's; u8 bits are the low bytes.
  auto out = evaluate_f32(R"({ lambda ; r:u32[2]. let
      k:key<fry>[] = random_wrap[impl=fry] r
      b:u8[4] = random_bits[bit_width=8 shape=(4,)] k
      c:key<fry>[] = random_clone k
      d:u32[2] = random_unwrap c
    in (b, d) })",
                          {tensor_of({2}, {0, 0}, DType::kU32)});
  EXPECT_EQ(out[0].data, (Values{4070199207u & 0xFF, 4202968722u & 0xFF, 1427181096 & 0xFF, 2012915765 & 0xFF}));
  EXPECT_EQ(out[1].data, (Values{0, 0}));
}

TEST(Random, KeysAreNotNumbers) {
  auto error_of = [](const std::string& text) {
    try {
      parse_program(text, "p");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("{ lambda ; k:key<fry>[]. let x:f32[] = sin k in (x,) }"),
            "p:1:40: sin does not take a PRNG key (key<fry>[]): a key is not a number; random_bits or random_unwrap give "
            "numbers from it");
  EXPECT_EQ(error_of("{ lambda ; k:key<rbg>[]. let in (k,) }"),
            "p:1:14: unsupported dtype 'key<rbg>' (rematkit supports f32, bf16, f16, f64, c64, c128, i8, i32, i64, u8, u32, bool and "
            "key<fry>)");
  EXPECT_EQ(error_of("{ lambda ; r:u32[3]. let k:key<fry>[] = random_wrap[impl=fry] r in (k,) }"),
            "p:1:41: random_wrap needs u32 key data whose last dim is 2 (a threefry key's two words), got u32[3]");
  EXPECT_EQ(error_of("{ lambda ; k:key<fry>[]. let b:u16[2] = random_bits[bit_width=16 shape=(2,)] k in (b,) }"),
            "p:1:32: unsupported dtype 'u16' (rematkit supports f32, bf16, f16, f64, c64, c128, i8, i32, i64, u8, u32, bool and "
            "key<fry>)");
  EXPECT_EQ(error_of("{ lambda ; s:i32[]. let k:key<rbg>[] = random_seed[impl=rbg] s in (k,) }"),
            "p:1:27: unsupported dtype 'key<rbg>' (rematkit supports f32, bf16, f16, f64, c64, c128, i8, i32, i64, u8, u32, bool and "
            "key<fry>)");
}

// Dropout as jax.random.bernoulli(key, 0.9, h.shape) and jnp.where(mask, h / 0.9, 0) print it.
constexpr const char* kDropout = R"({ lambda ; k:key<fry>[] x:f32[3,4] w:f32[4,5]. let
    y:f32[3,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
    h:f32[3,5] = tanh y
    b:u32[3,5] = random_bits[bit_width=32 shape=(3, 5)] k
    s:u32[3,5] = shift_right_logical b 9:u32[]
    o:u32[3,5] = or s 1065353216:u32[]
    f:f32[3,5] = bitcast_convert_type[new_dtype=float32] o
    u:f32[3,5] = sub f 1.0:f32[]
    m:bool[3,5] = lt u 0.8999999761581421:f32[]
    d:f32[3,5] = div h 0.9:f32[]
    z:f32[3,5] = broadcast_in_dim[broadcast_dimensions=() shape=(3, 5)] 0.0:f32[]
    r:f32[3,5] = select_n m z d
    v:f32[3,5] = sin r
    l:f32[] = reduce_sum[axes=(0, 1)] v
  in (l,) })";

TEST(Random, DropoutGradientsAreBitIdenticalUnderEveryPolicy) {
  const Program program = parse_program(kDropout, "dropout");
  const RandomInputs in = random_inputs(program, 3, 0.1, 1.0, true);
  std::vector<Tensor> args = in.arguments;
  args[0] = Tensor::scalar(0, DType::kKeyFry);  // key(0) is the key whose words are [0, 0]
  std::optional<GradientResult> first;
  for (const char* policy : {"everything_saveable", "nothing_saveable", "dots_saveable",
                             "dots_with_no_batch_dims_saveable", "save_only_these_names('none')"}) {
    SCOPED_TRACE(policy);
    const Linearization lin = linearize_with(program, policy);
    const GradientResult g = interpret_gradient(lin, {}, args, Arithmetic::kFloat32);
    EXPECT_FALSE(g.gradients[0].has_value());  // keys are not differentiated
    ASSERT_TRUE(g.gradients[1].has_value() && g.gradients[2].has_value());
    if (!first) {
      first = g;
      // Some elements are dropped (a zero gradient through the mask), most are not.
      int zeros = 0;
      for (double v : g.gradients[1]->data) zeros += v == 0;
      EXPECT_LT(zeros, 12);
      continue;
    }
    EXPECT_EQ(g.outputs[0].data, first->outputs[0].data);
    EXPECT_EQ(g.gradients[1]->data, first->gradients[1]->data);
    EXPECT_EQ(g.gradients[2]->data, first->gradients[2]->data);
  }
}

TEST(Random, DropoutGradientMatchesFiniteDifferences) {
  const Program program = parse_program(kDropout, "dropout");
  RandomInputs in = random_inputs(program, 5, 0.1, 1.0, true);
  in.arguments[0] = Tensor::scalar(0, DType::kKeyFry);
  const GradientResult ad = interpret_gradient(linearize_with(program, "nothing_saveable"), {}, in.arguments, Arithmetic::kFloat64);
  const std::vector<Tensor> fd = finite_difference_gradients(program, in);
  for (size_t a = 1; a < 3; ++a)
    for (size_t i = 0; i < fd[a].data.size(); ++i)
      EXPECT_NEAR(ad.gradients[a]->data[i], fd[a].data[i], 1e-6 * (1 + std::fabs(fd[a].data[i]))) << a << " " << i;
}

TEST(Random, TheKeyIsWhatTheBackwardPassKeepsUnderNothingSaveable) {
  // Under nothing_saveable the mask is recomputed from the key: the key is a residual (8 bytes),
  // the mask is not.
  const Linearization lin = linearize_with(parse_program(kDropout, "dropout"), "nothing_saveable");
  bool key_kept = false;
  for (const Residual& r : lin.residuals) {
    EXPECT_NE(r.type.dtype, DType::kBool);
    key_kept |= r.type.dtype == DType::kKeyFry;
  }
  EXPECT_TRUE(key_kept);
}

}  // namespace
}  // namespace rematkit::testing
