// Reference kernels, one family per file; internal to the interpreter.
#pragma once
#include "rematkit/params.hpp"
#include "rematkit/primitive.hpp"
#include "rematkit/tensor.hpp"

namespace rematkit::kernels {

// elementwise.cpp
Tensor unary(Prim prim, const Params& params, const Tensor& x, const Type& out, Arithmetic arithmetic);
Tensor binary(Prim prim, const Tensor& a, const Tensor& b, const Type& out, Arithmetic arithmetic);
Tensor select_n(const std::vector<const Tensor*>& inputs, const Type& out);

// dot_general.cpp
Tensor dot_general(const DotDims& dims, const Tensor& lhs, const Tensor& rhs, const Type& out, Arithmetic arithmetic);

// structural.cpp
Tensor reduce(Prim prim, const std::vector<int64_t>& axes, const Tensor& x, const Type& out, Arithmetic arithmetic);
Tensor broadcast_in_dim(const std::vector<int64_t>& dims, const Tensor& x, const Type& out);
Tensor transpose(const std::vector<int64_t>& permutation, const Tensor& x, const Type& out);
Tensor softmax(int64_t axis, const Tensor& x, Arithmetic arithmetic);

}  // namespace rematkit::kernels
