// Mutable arrays (jax.new_ref, jax.experimental.mutable_array) read and written whole, read as
// discharge_state reads them (jax/_src/state/discharge.py): each read gives the value the ref holds
// then, a store replaces it, an accumulation adds to it; the program becomes pure. What rematkit
// does not read (part of a ref, a ref passed on) is refused in one line at its place.
#include <gtest/gtest.h>

#include <cmath>

#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/printer.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

const char* kAccumulate = R"({ lambda ; a:f32[3] b:f32[3]. let
    r:Ref{f32[3]} = new_ref[memory_space=None] a
    c:f32[3] <- r[...]
    d:f32[3] = sin c
    r[...] <- d
    r[...] += b
    e:f32[3], r[...] <- r[...], a
    f:f32[3] = mul e b
    g:f32[3] = freeze r
    h:f32[3] = add f g
  in (h,) })";

// By hand: d = sin a; the ref holds d, then d + b; e is d + b and the ref a again; h = (sin a + b) b + a.
TEST(MutableArrays, ReadsGiveTheValueTheRefHoldsThen) {
  const std::vector<Tensor> out = evaluate_f64(kAccumulate, {tensor_of({3}, {0.5, 1, -2}), tensor_of({3}, {1, 2, 3})});
  const double a[] = {0.5, 1, -2}, b[] = {1, 2, 3};
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(out[0].data[i], (std::sin(a[i]) + b[i]) * b[i] + a[i]);
  const Program p = parse_program(kAccumulate, "p");
  // The pure program: sin, the accumulation's add, mul, add; printed, it reads back the same.
  std::vector<std::string> prims;
  for (const Equation& e : p.eqns) prims.push_back(std::string(prim_name(e.prim)));
  EXPECT_EQ(prims, (std::vector<std::string>{"sin", "add", "mul", "add"}));
  EXPECT_EQ(parse_program(print_program(p), "printed"), p);
  expect_gradient_matches_finite_differences(p, {tensor_of({3}, {0.5, 1, -2}), tensor_of({3}, {1, 2, 3})}, {0, 1});
}

TEST(MutableArrays, WhatIsNotReadWholeIsRefusedAtItsPlace) {
  auto error = [](const std::string& body, const std::string& binders = "a:f32[2,3]") {
    return usage_error([&] { parse_program("{ lambda ; " + binders + ". let\n" + body + "\n in () }", "p"); });
  };
  EXPECT_EQ(error("r:Ref{f32[2,3]} = mutable_array a\nc:f32[3] <- r[1,:]"),
            "p:3:13: 'r[1,:]' reads or writes part of a ref; rematkit reads refs whole (r[...]), as discharge_state does");
  EXPECT_EQ(error("r:Ref{f32[2,3]} = mutable_array a\nr[:] <- a"),
            "p:3:1: 'r[:]' reads or writes part of a ref; rematkit reads refs whole (r[...]), as discharge_state does");
  EXPECT_EQ(error("c:f32[2,3] = sin r", "r:Ref{f32[2,3]}"),
            "p:1:14: a mutable array (Ref{..}) here is not supported: rematkit reads refs the program makes "
            "(mutable_array, new_ref), read and written whole, not refs as arguments or binders");
  EXPECT_EQ(error("r:Ref{f32[2,3]} = mutable_array a\nc:f32[2,3] = sin r"),
            "p:3:18: the ref 'r' is an operand here; rematkit reads refs only whole, through r[...] and freeze, as "
            "discharge_state does");
  EXPECT_EQ(error("r:Ref{f32[2,3]} = mutable_array a\nr[...] <- 1.0:f32[]"),
            "p:3:11: storing f32[] where the ref holds f32[2,3]");
  EXPECT_EQ(error("r:Ref{f32[]} = mutable_array 1.0\nr[] <- 2j", "a:f32[2,3]"),
            "p:3:8: storing c64[] where the ref holds f32[]");  // an imaginary part is never dropped
  EXPECT_EQ(error("r:Ref{f32[2,3]} = empty_ref[dtype=float32 shape=(2, 3)]"),
            "p:2:19: empty_ref makes a ref with no value yet; rematkit reads refs made from a value (new_ref)");
  EXPECT_EQ(error("c:f32[2,3] <- a[...]"), "p:2:15: 'a' is not a ref (a value), so it has no [...] to read or write");
  EXPECT_EQ(error("r:Ref{f32[2,3]} = mutable_array a\nc:f32[3,2] <- r[...]"),
            "p:3:1: 'c' is declared f32[3,2] but the ref holds f32[2,3]");
}

}  // namespace
}  // namespace rematkit::testing
