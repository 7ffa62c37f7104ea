// Complex numbers (c64, c128) as JAX prints and differentiates them: literals in every form Python's
// complex repr takes, lax.py's type rules for real, imag, complex, conj and abs, fft.py's four
// transforms checked against DFTs worked out by hand, JAX's complex gradient convention, and
// gradients through every complex rule checked against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

Tensor complex_of(Shape shape, std::vector<double> re, std::vector<double> im, DType dtype = DType::kC64) {
  return Tensor{Type{dtype, std::move(shape), MemorySpace::kDevice}, std::move(re), std::move(im)};
}

void expect_complex(const Tensor& t, const std::vector<double>& re, const std::vector<double>& im, double tol = 1e-12) {
  ASSERT_EQ(t.data.size(), re.size());
  ASSERT_EQ(t.imag.size(), im.size());
  for (size_t i = 0; i < re.size(); ++i) {
    EXPECT_NEAR(t.data[i], re[i], tol) << "real part " << i;
    EXPECT_NEAR(t.imag[i], im[i], tol) << "imaginary part " << i;
  }
}

TEST(ComplexNumbers, LiteralsInEveryFormPythonPrints) {
  const Program p = parse_program(R"({ lambda ; a:c64[] b:c128[]. let
      c:c64[] = mul a 2j
      d:c64[] = mul c (1+2j)
      e:c64[] = add d (-0-1.5j)
      f:c64[] = sub e (1e-05-2e+03j):c64[]
      g:c128[] = mul b (0.5+0j):c128[]
      h:c64[] = add f -3j
    in (h, g) })", "literals");
  auto lit = [&](size_t eqn) { return p.eqns[eqn].inputs[1]; };
  EXPECT_EQ(lit(0).literal, 0);
  EXPECT_EQ(lit(0).literal_imag, 2);
  EXPECT_EQ(lit(0).type.dtype, DType::kC64);  // untyped: the other operand's dtype
  EXPECT_EQ(lit(1).literal, 1);
  EXPECT_EQ(lit(1).literal_imag, 2);
  EXPECT_TRUE(std::signbit(lit(2).literal));  // -0, kept as Python wrote it
  EXPECT_EQ(lit(2).literal_imag, -1.5);
  EXPECT_EQ(lit(3).literal, static_cast<double>(1e-05f));  // rounded to c64's f32 parts
  EXPECT_EQ(lit(3).literal_imag, -2000);
  EXPECT_EQ(lit(4).type.dtype, DType::kC128);
  EXPECT_EQ(lit(4).literal, 0.5);
  EXPECT_EQ(lit(5).literal_imag, -3);
  // What prints reads back the same.
  EXPECT_EQ(parse_program(print_program(p), "printed"), p);
}

TEST(ComplexNumbers, TypeRulesAreLaxs) {
  auto types = [](const std::string& eqns, const std::string& binders) {
    const Program p = parse_program("{ lambda ; " + binders + ". let " + eqns + " in () }", "t");
    std::vector<std::string> out;
    for (const Equation& e : p.eqns) out.push_back(p.vars[e.outputs[0]].type.str());
    return out;
  };
  EXPECT_EQ(types("c:c64[3] = complex a a; d:f32[3] = real c; e:f32[3] = imag c; f:c64[3] = conj a; "
                  "g:c64[3] = conj c; h:f32[3] = abs c; k:c128[3] = complex b b; l:f64[3] = abs k",
                  "a:f32[3] b:f64[3]"),
            (std::vector<std::string>{"c64[3]", "f32[3]", "f32[3]", "c64[3]", "c64[3]", "f32[3]", "c128[3]", "f64[3]"}));
  // fft.py: RFFT halves the last length (n // 2 + 1); IRFFT gives the lengths back, real.
  EXPECT_EQ(types("r:c64[2,3,5] = fft[fft_lengths=(3, 8) fft_type=2] x; y:f32[2,3,8] = fft[fft_lengths=(3, 8) "
                  "fft_type=FftType.IRFFT] r; z:f32[2,3,9] = fft[fft_lengths=(3, 9) fft_type=3] r",
                  "x:f32[2,3,8]"),
            (std::vector<std::string>{"c64[2,3,5]", "f32[2,3,8]", "f32[2,3,9]"}));
  EXPECT_EQ(usage_error([] { parse_program("{ lambda ; a:f32[3]. let b:f32[3] = real a in (b,) }", "p"); }),
            "p:1:37: real needs a complex operand (c64 or c128), got f32[3]");
  EXPECT_EQ(usage_error([] { parse_program("{ lambda ; a:f32[3] b:f64[3]. let c:c64[3] = complex a b in (c,) }", "p"); }),
            "p:1:46: complex needs two operands of one dtype, f32 or f64: f32[3], f64[3]");
  EXPECT_EQ(usage_error([] { parse_program("{ lambda ; a:c64[3]. let b:c64[3] = tanh a in (b,) }", "p"); }),
            "p:1:37: tanh of a complex operand (c64[3]) is not supported: rematkit computes complex numbers through "
            "add, sub, mul, div, neg, abs, exp, log, sin, cos, sqrt, square, integer_pow, eq, ne, dot_general, "
            "reduce_sum, cumsum, the primitives that move elements, real, imag, complex, conj and fft");
  EXPECT_EQ(usage_error([] { parse_program("{ lambda ; a:f32[8]. let b:c64[8] = fft[fft_lengths=(8,) fft_type=0] a in (b,) }", "p"); }),
            "p:1:37: fft: an FFT, IFFT or IRFFT needs a complex operand, got f32[8]");
  EXPECT_EQ(usage_error([] { parse_program("{ lambda ; a:c64[8]. let b:c64[8] = fft[fft_lengths=(8,) fft_type=HFFT] a in (b,) }", "p"); }),
            "p:1:37: fft_type must be FftType.FFT, IFFT, RFFT or IRFFT (or 0-3), got HFFT");
  EXPECT_EQ(usage_error([] { parse_program("{ lambda ; a:f32[8]. let b:f32[8] = mul a 1j:f32[] in (b,) }", "p"); }),
            "p:1:46: the complex literal 1j needs a complex type (c64 or c128), not f32[]");
}

TEST(ComplexNumbers, BytesAreTwoPartsEach) {
  EXPECT_EQ((Type{DType::kC64, {8}, MemorySpace::kDevice}).bytes(), 64);
  EXPECT_EQ((Type{DType::kC128, {8}, MemorySpace::kDevice}).bytes(), 128);
  EXPECT_EQ(parse_dtype("complex64"), DType::kC64);
  EXPECT_EQ(dtype_name(DType::kC128), "c128");
}

// DFTs small enough to do by hand: X_k = sum_j x_j e^{-2 pi i jk/n}.
TEST(ComplexNumbers, FourierTransformsAreTheDftsWorkedOutByHand) {
  // x = [1, i, 0, 0]: X_k = 1 + i (-i)^k = 1+i, 2, 1-i, 0; the inverse gives x back.
  const std::vector<Tensor> ffts = evaluate_f64(R"({ lambda ; x:c128[4]. let
      y:c128[4] = fft[fft_lengths=(4,) fft_type=FftType.FFT] x
      z:c128[4] = fft[fft_lengths=(4,) fft_type=FftType.IFFT] y
    in (y, z) })", {complex_of({4}, {1, 0, 0, 0}, {0, 1, 0, 0}, DType::kC128)});
  expect_complex(ffts[0], {1, 2, 1, 0}, {1, 0, -1, 0});
  expect_complex(ffts[1], {1, 0, 0, 0}, {0, 1, 0, 0});
  // RFFT of [1, 2, 3, 4]: X_0 = 10, X_1 = 1 - 2i - 3 + 4i = -2 + 2i, X_2 = 1 - 2 + 3 - 4 = -2; IRFFT
  // of those three bins with n = 4 gives the signal back.
  const std::vector<Tensor> real = evaluate_f64(R"({ lambda ; x:f64[4]. let
      y:c128[3] = fft[fft_lengths=(4,) fft_type=2] x
      z:f64[4] = fft[fft_lengths=(4,) fft_type=3] y
    in (y, z) })", {tensor_of({4}, {1, 2, 3, 4}, DType::kF64)});
  expect_complex(real[0], {10, -2, -2}, {0, 2, 0});
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(real[1].data[i], static_cast<double>(i + 1), 1e-12);
  // A 2-D FFT over both dims of an impulse is all ones; over the last dim only, each row's own.
  const std::vector<Tensor> two = evaluate_f64(R"({ lambda ; x:c128[2,2]. let
      y:c128[2,2] = fft[fft_lengths=(2, 2) fft_type=0] x
      z:c128[2,2] = fft[fft_lengths=(2,) fft_type=0] x
    in (y, z) })", {complex_of({2, 2}, {1, 0, 0, 0}, {0, 0, 0, 0}, DType::kC128)});
  expect_complex(two[0], {1, 1, 1, 1}, {0, 0, 0, 0});
  expect_complex(two[1], {1, 1, 0, 0}, {0, 0, 0, 0});
}

TEST(ComplexNumbers, ArithmeticIsComplexArithmetic) {
  // (1+2i)(3-i) = 5+5i; (5+5i)/(1+2i) = 3-i; |3+4i| = 5; e^{i pi} = -1; sqrt(-4) = 2i; (1+i)^3 = -2+2i;
  // conj(1+2i) = 1-2i.
  const std::vector<Tensor> out = evaluate_f64(R"({ lambda ; a:c128[] b:c128[] c:c128[] d:c128[]. let
      p:c128[] = mul a b
      q:c128[] = div p a
      r:f64[] = abs c
      s:c128[] = exp d
      t:c128[] = sqrt (-4+0j):c128[]
      u:c128[] = integer_pow[y=3] (1+1j):c128[]
      v:c128[] = conj[input_dtype=complex128] a
      w:i32[] = convert_element_type[new_dtype=int32 weak_type=False] (3.7-1j):c128[]
      x:i32[] = convert_element_type[new_dtype=int32 weak_type=False] (-3e+10+0j):c128[]
    in (p, q, r, s, t, u, v, w, x) })", {complex_of({}, {1}, {2}, DType::kC128), complex_of({}, {3}, {-1}, DType::kC128),
                                   complex_of({}, {3}, {4}, DType::kC128), complex_of({}, {0}, {M_PI}, DType::kC128)});
  expect_complex(out[0], {5}, {5});
  expect_complex(out[1], {3}, {-1});
  EXPECT_NEAR(out[2].data[0], 5, 1e-12);
  expect_complex(out[3], {-1}, {0});
  expect_complex(out[4], {0}, {2});
  expect_complex(out[5], {-2}, {2});
  expect_complex(out[6], {1}, {-2});
  // To an integer, the real part as XLA converts a float: toward zero, saturating.
  EXPECT_EQ(out[7].data[0], 3);
  EXPECT_EQ(out[8].data[0], -2147483648.0);
}

// slicing.py's _gather_fill: a window FILL_OR_DROP drops is NaN for an inexact dtype, and a complex
// NaN is nan + 0j.
TEST(ComplexNumbers, ADroppedGatherWindowIsNanPlusZeroI) {
  const std::vector<Tensor> out = evaluate_f64(R"({ lambda ; x:c128[3] i:i32[2,1]. let y:c128[2] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None mode=GatherScatterMode.FILL_OR_DROP slice_sizes=(1,)] x i in (y,) })",
                                               {complex_of({3}, {1, 2, 3}, {4, 5, 6}, DType::kC128), tensor_of({2, 1}, {2, 7}, DType::kI32)});
  EXPECT_EQ(out[0].data[0], 3);
  EXPECT_EQ(out[0].imag[0], 6);
  EXPECT_TRUE(std::isnan(out[0].data[1]));
  EXPECT_EQ(out[0].imag[1], 0);
}

// jax.grad of a real function of z = x + iy is df/dx - i df/dy (the autodiff cookbook: f = |z|^2
// gives 2x - 2iy, the conjugate of 2z).
TEST(ComplexNumbers, GradientOfAComplexArgumentIsJaxsConjugateConvention) {
  const Program p = parse_program(R"({ lambda ; z:c64[2]. let
      c:c64[2] = conj[input_dtype=complex64] z
      m:c64[2] = mul z c
      r:f32[2] = real m
      s:f32[] = reduce_sum[axes=(0,)] r
    in (s,) })", "abs_squared");
  const GradientResult g = interpret_gradient(linearize_with(p), {}, {complex_of({2}, {3, -1}, {4, 0.5})}, Arithmetic::kFloat64);
  expect_complex(*g.gradients[0], {6, -2}, {-8, -1});
  EXPECT_EQ(g.outputs[0].data[0], 25 + 1.25);
}

// Every complex rule in one program of real and complex arguments, its gradient against central
// differences in f64 (a complex argument's as df/dx - i df/dy), from the interpreter in f64 and from
// the reference backend in f32.
TEST(ComplexNumbers, GradientsThroughEveryRuleMatchFiniteDifferences) {
  const Program p = parse_program(R"({ lambda ; a:f32[8] b:f32[8] w:c64[3,8] z:c64[3]. let
      c:c64[8] = complex a b
      d:c64[8] = fft[fft_lengths=(8,) fft_type=0] c
      e:c64[8] = mul d (0.5-1j)
      f:c64[8] = fft[fft_lengths=(8,) fft_type=1] e
      g:c64[5] = fft[fft_lengths=(8,) fft_type=2] a
      h:f32[8] = fft[fft_lengths=(8,) fft_type=3] g
      i:c64[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] w f
      k:c64[3] = div i z
      l:c64[3] = exp k
      m:c64[3] = sin l
      n:c64[3] = cos z
      o:c64[3] = add m n
      q:c64[3] = sqrt o
      r:c64[3] = log q
      s:c64[3] = square r
      t:c64[3] = integer_pow[y=3] s
      u:f32[3] = abs t
      v:f32[3] = imag r
      x:c64[8] = conj[input_dtype=float32] h
      y:f32[8] = real x
      j:c64[8] = convert_element_type[new_dtype=complex64] y
      o2:c64[8] = sub j d
      p2:f32[8] = imag o2
      q2:f32[] = reduce_sum[axes=(0,)] p2
      r2:f32[] = reduce_sum[axes=(0,)] u
      s2:f32[] = reduce_sum[axes=(0,)] v
      t2:f32[] = add q2 r2
      u2:f32[] = add t2 s2
    in (u2,) })", "every_rule");
  const RandomInputs in = random_inputs(p, 7, 0.1, 0.5);
  expect_gradient_matches_finite_differences(p, in.arguments, {0, 1, 2, 3});
  // The same gradient run on the reference backend, in f32: within f32's rounding of the differences.
  const GradientResult ran = run_gradient(linearize_with(p), {}, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  const std::vector<Tensor> fd = finite_difference_gradients(p, in, 1e-6);
  for (size_t a = 0; a < 4; ++a) {
    double scale = 1;
    for (double v : fd[a].data) scale = std::max(scale, std::fabs(v));
    for (double v : fd[a].imag) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < fd[a].data.size(); ++i) EXPECT_NEAR(ran.gradients[a]->data[i], fd[a].data[i], 1e-4 * scale);
    for (size_t i = 0; i < fd[a].imag.size(); ++i) EXPECT_NEAR(ran.gradients[a]->imag[i], fd[a].imag[i], 1e-4 * scale);
  }
}

// A scan whose carry, constant and stacked inputs are complex: the constant's cotangent sums over the
// iterations in both parts.
TEST(ComplexNumbers, GradientsThroughAComplexScanMatchFiniteDifferences) {
  const Program p = parse_program(R"({ lambda ; w:c64[3] c:c64[3] xs:c64[4,3]. let
      d:c64[3] ys:c64[4,3] = scan[jaxpr={ lambda ; v:c64[3] a:c64[3] x:c64[3]. let
          e:c64[3] = mul a x
          f:c64[3] = add e v
          g:c64[3] = sin f
        in (g, e) } length=4 num_carry=1 num_consts=1 reverse=False] w c xs
      r:f32[3] = real d
      i:f32[4,3] = imag ys
      s:f32[] = reduce_sum[axes=(0,)] r
      t:f32[] = reduce_sum[axes=(0, 1)] i
      u:f32[] = add s t
    in (u,) })", "complex_scan");
  const RandomInputs in = random_inputs(p, 11, 0.2, 0.8);
  expect_gradient_matches_finite_differences(p, in.arguments, {0, 1, 2});
}

// Residuals by hand from JAX's rules: mul keeps both operands' known values (a tangent's product
// with the other), fft, complex, real and reduce_sum are linear and keep nothing, and abs keeps
// the div of its complex rule (real(g * conj(x) / ans)). Under nothing_saveable only the arguments.
TEST(ComplexNumbers, ResidualsAndTheirBytesFollowJaxsRules) {
  const std::string body = R"(
      c:c64[8] = complex a b
      d:c64[8] = fft[fft_lengths=(8,) fft_type=0] c
      e:c64[8] = mul d (1+2j)
      f:c64[8] = mul e d
      g:f32[8] = real f
      h:f32[8] = abs d
      i:f32[8] = add g h
      j:f32[] = reduce_sum[axes=(0,)] i)";
  const Program p = parse_program("{ lambda ; a:f32[8] b:f32[8]. let" + body + "\n in (j,) }", "spectral");
  std::vector<std::string> lines;
  static const std::regex suffix(R"( from [^ ]+:[0-9]+$)");
  const Linearization lin = linearize_with(p);
  for (const std::string& line : residual_lines(lin)) lines.push_back(std::regex_replace(line, suffix, ""));
  EXPECT_EQ(lines, (std::vector<std::string>{"c64[8] output of fft", "c64[8] output of mul", "c64[8] output of div"}));
  int64_t bytes = 0;
  for (const Residual& r : lin.residuals) bytes += lin.graph.values[r.value].type.bytes();
  EXPECT_EQ(bytes, 3 * 8 * 8);  // three c64[8]: 8 bytes an element
  const Linearization none = linearize_with(p, "nothing_saveable");
  lines.clear();
  for (const std::string& line : residual_lines(none)) lines.push_back(std::regex_replace(line, suffix, ""));
  EXPECT_EQ(lines, (std::vector<std::string>{"f32[8] from the argument a", "f32[8] from the argument b"}));
}

// The real backends decline complex equations; the reference backend runs them, with the same bits
// as the interpreter (the one real multiply is IEEE's on every backend).
TEST(ComplexNumbers, OnlyTheReferenceBackendRunsThem) {
  const Program p = parse_program(R"({ lambda ; a:f32[16] b:f32[16]. let
      c:c64[16] = complex a b
      d:c64[16] = add c c
      e:c64[16] = mul d c
      f:c64[16] = fft[fft_lengths=(16,) fft_type=0] e
      g:f32[16] = abs f
      h:f32[16] = mul g g
    in (h,) })", "mixed");
  const Linearization lin = linearize_with(p);
  const std::vector<std::string> installed = default_plugins().backend_names();
  BackendOptions options{installed, &default_plugins()};
  std::stable_partition(options.preference.begin(), options.preference.end(), [](const std::string& b) { return b != "reference"; });
  const StepProgram steps = build_step_program(lin, options, Pass::kBackward, InputMode::kLoadedEachRun);
  int complex_steps = 0;
  for (const Step& step : steps.steps()) {
    if (step.kind != StepKind::kKernel) continue;
    bool complex = false;
    for (int b : step.inputs) complex |= b >= 0 && is_complex(steps.buffer_type(b).dtype);
    for (int b : step.outputs) complex |= is_complex(steps.buffer_type(b).dtype);
    if (!complex) continue;
    ++complex_steps;
    EXPECT_EQ(step.kernel->backend(), "reference") << prim_name(lin.graph.eqns[step.equation].prim);
  }
  EXPECT_GE(complex_steps, 8);
  const RandomInputs in = random_inputs(p, 3);
  const GradientResult expected = interpret_gradient(lin, {}, in.arguments, Arithmetic::kFloat32);
  const GradientResult got = run_gradient(lin, {}, in.arguments, options);
  for (size_t a = 0; a < 2; ++a) EXPECT_EQ(got.gradients[a]->data, expected.gradients[a]->data);
}

}  // namespace
}  // namespace rematkit::testing
