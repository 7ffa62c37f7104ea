#include "rematkit/primitive.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <utility>

#include "rematkit/params.hpp"

namespace rematkit {
namespace {

struct PrimName {
  Prim prim;
  std::string_view name;
};

constexpr std::array kPrimNames = {
    PrimName{Prim::kAdd, "add"}, PrimName{Prim::kSub, "sub"}, PrimName{Prim::kMul, "mul"},
    PrimName{Prim::kDiv, "div"}, PrimName{Prim::kMax, "max"}, PrimName{Prim::kMin, "min"},
    PrimName{Prim::kGt, "gt"}, PrimName{Prim::kGe, "ge"}, PrimName{Prim::kLt, "lt"},
    PrimName{Prim::kLe, "le"}, PrimName{Prim::kEq, "eq"}, PrimName{Prim::kNe, "ne"},
    PrimName{Prim::kNeg, "neg"}, PrimName{Prim::kExp, "exp"}, PrimName{Prim::kLog, "log"},
    PrimName{Prim::kSin, "sin"}, PrimName{Prim::kCos, "cos"}, PrimName{Prim::kTanh, "tanh"},
    PrimName{Prim::kLogistic, "logistic"}, PrimName{Prim::kSqrt, "sqrt"}, PrimName{Prim::kRsqrt, "rsqrt"},
    PrimName{Prim::kSquare, "square"}, PrimName{Prim::kIntegerPow, "integer_pow"},
    PrimName{Prim::kStopGradient, "stop_gradient"}, PrimName{Prim::kName, "name"},
    PrimName{Prim::kRelu, "relu"}, PrimName{Prim::kConvertElementType, "convert_element_type"},
    PrimName{Prim::kSelectN, "select_n"}, PrimName{Prim::kDotGeneral, "dot_general"},
    PrimName{Prim::kReduceSum, "reduce_sum"}, PrimName{Prim::kReduceMax, "reduce_max"},
    PrimName{Prim::kBroadcastInDim, "broadcast_in_dim"}, PrimName{Prim::kReshape, "reshape"},
    PrimName{Prim::kTranspose, "transpose"}, PrimName{Prim::kSqueeze, "squeeze"},
    PrimName{Prim::kSoftmax, "softmax"}, PrimName{Prim::kPjit, "pjit"},
    PrimName{Prim::kCheckpoint, "checkpoint"},
};

constexpr std::array kAliases = {
    PrimName{Prim::kPjit, "jit"}, PrimName{Prim::kCheckpoint, "remat"},
    PrimName{Prim::kCheckpoint, "remat2"}, PrimName{Prim::kCheckpoint, "remat_call"},
};

std::string types_str(const std::vector<Type>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + types[i].str();
  return out;
}

void expect_arity(Prim prim, const std::vector<Type>& inputs, size_t n, const SourceLocation& where) {
  if (inputs.size() != n)
    fail_at(where, std::string(prim_name(prim)) + " takes " + std::to_string(n) + " operand(s), got " +
                       std::to_string(inputs.size()));
}

void expect_floating(Prim prim, const Type& t, const SourceLocation& where) {
  if (!is_floating(t.dtype))
    fail_at(where, std::string(prim_name(prim)) + " needs a floating operand, got " + t.str());
}

// Axes must be distinct and within [0, rank).
void check_axes(Prim prim, const std::vector<int64_t>& axes, int rank, const SourceLocation& where) {
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    if (a < 0 || a >= rank || !seen.insert(a).second)
      fail_at(where, std::string(prim_name(prim)) + ": axis " + std::to_string(a) +
                         " is out of range or repeated for rank " + std::to_string(rank));
  }
}

Type binary_result(Prim prim, const std::vector<Type>& in, const SourceLocation& where) {
  expect_arity(prim, in, 2, where);
  if (in[0].dtype != in[1].dtype)
    fail_at(where, std::string(prim_name(prim)) + " operands differ in dtype: " + types_str(in));
  auto shape = broadcast_shapes(in[0].shape, in[1].shape);
  if (!shape) fail_at(where, std::string(prim_name(prim)) + " operand shapes do not match: " + types_str(in));
  if (!is_comparison(prim) && in[0].dtype == DType::kBool)
    fail_at(where, std::string(prim_name(prim)) + " does not take bool operands");
  return Type{is_comparison(prim) ? DType::kBool : in[0].dtype, *shape, MemorySpace::kDevice};
}

Type dot_general_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  expect_arity(Prim::kDotGeneral, in, 2, where);
  const DotDims d = param_dot_dims(params, where);
  const Shape& l = in[0].shape;
  const Shape& r = in[1].shape;
  if (in[0].dtype != in[1].dtype || in[0].dtype == DType::kBool)
    fail_at(where, "dot_general operands must share a numeric dtype: " + types_str(in));
  if (d.lhs_contract.size() != d.rhs_contract.size() || d.lhs_batch.size() != d.rhs_batch.size())
    fail_at(where, "dot_general dimension_numbers pair lists of different lengths");
  std::vector<int64_t> lhs_used = d.lhs_contract, rhs_used = d.rhs_contract;
  lhs_used.insert(lhs_used.end(), d.lhs_batch.begin(), d.lhs_batch.end());
  rhs_used.insert(rhs_used.end(), d.rhs_batch.begin(), d.rhs_batch.end());
  check_axes(Prim::kDotGeneral, lhs_used, in[0].rank(), where);
  check_axes(Prim::kDotGeneral, rhs_used, in[1].rank(), where);
  auto check_pairs = [&](const std::vector<int64_t>& a, const std::vector<int64_t>& b, const char* what) {
    for (size_t i = 0; i < a.size(); ++i)
      if (l[a[i]] != r[b[i]])
        fail_at(where, std::string("dot_general ") + what + " dimensions differ in size: lhs dim " +
                           std::to_string(a[i]) + " is " + std::to_string(l[a[i]]) + ", rhs dim " +
                           std::to_string(b[i]) + " is " + std::to_string(r[b[i]]));
  };
  check_pairs(d.lhs_contract, d.rhs_contract, "contracting");
  check_pairs(d.lhs_batch, d.rhs_batch, "batch");
  Shape out;
  for (int64_t b : d.lhs_batch) out.push_back(l[b]);
  for (int64_t f : dot_free_dims(in[0].rank(), d.lhs_contract, d.lhs_batch)) out.push_back(l[f]);
  for (int64_t f : dot_free_dims(in[1].rank(), d.rhs_contract, d.rhs_batch)) out.push_back(r[f]);
  return Type{in[0].dtype, out, MemorySpace::kDevice};
}

std::optional<DType> dtype_param(const Params& params, const SourceLocation& where) {
  const ParamValue* v = params.find("new_dtype");
  if (!v) fail_at(where, "missing parameter 'new_dtype'");
  auto d = parse_dtype(v->text);
  if (!d) fail_at(where, "unsupported dtype '" + v->str() + "' (rematkit supports f32, i32, bool)");
  return d;
}

}  // namespace

std::string_view prim_name(Prim prim) {
  for (const PrimName& p : kPrimNames)
    if (p.prim == prim) return p.name;
  return "?";
}

std::optional<Prim> lookup_prim(std::string_view name) {
  for (const PrimName& p : kPrimNames)
    if (p.name == name) return p.prim;
  for (const PrimName& p : kAliases)
    if (p.name == name) return p.prim;
  return std::nullopt;
}

bool is_comparison(Prim prim) { return prim >= Prim::kGt && prim <= Prim::kNe; }
bool is_binary_elementwise(Prim prim) { return prim >= Prim::kAdd && prim <= Prim::kNe; }
bool is_unary_elementwise(Prim prim) { return prim >= Prim::kNeg && prim <= Prim::kConvertElementType; }
bool has_body(Prim prim) { return prim == Prim::kPjit || prim == Prim::kCheckpoint; }

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  if (a == b) return a;
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (a.size() != b.size()) return std::nullopt;
  Shape out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i] || b[i] == 1) out[i] = a[i];
    else if (a[i] == 1) out[i] = b[i];
    else return std::nullopt;
  }
  return out;
}

std::vector<Type> infer_types(Prim prim, const Params& params, const std::vector<Type>& in,
                              const SourceLocation& where) {
  const std::string name(prim_name(prim));
  if (is_binary_elementwise(prim)) return {binary_result(prim, in, where)};
  switch (prim) {
    case Prim::kNeg:
      expect_arity(prim, in, 1, where);
      if (in[0].dtype == DType::kBool) fail_at(where, "neg does not take a bool operand");
      return {in[0]};
    case Prim::kExp: case Prim::kLog: case Prim::kSin: case Prim::kCos: case Prim::kTanh:
    case Prim::kLogistic: case Prim::kSqrt: case Prim::kRsqrt: case Prim::kSquare: case Prim::kRelu:
      expect_arity(prim, in, 1, where);
      expect_floating(prim, in[0], where);
      return {in[0]};
    case Prim::kIntegerPow:
      expect_arity(prim, in, 1, where);
      expect_floating(prim, in[0], where);
      param_int(params, "y", where);
      return {in[0]};
    case Prim::kStopGradient: case Prim::kName:
      expect_arity(prim, in, 1, where);
      if (prim == Prim::kName) param_name(params, "name", where);
      return {in[0]};
    case Prim::kConvertElementType: {
      expect_arity(prim, in, 1, where);
      Type t = in[0];
      t.dtype = *dtype_param(params, where);
      return {t};
    }
    case Prim::kSelectN: {
      if (in.size() < 2) fail_at(where, "select_n takes a predicate and at least one case");
      if (in[0].dtype != DType::kBool && in[0].dtype != DType::kI32)
        fail_at(where, "select_n predicate must be bool or i32, got " + in[0].str());
      for (size_t i = 2; i < in.size(); ++i)
        if (in[i].dtype != in[1].dtype || in[i].shape != in[1].shape)
          fail_at(where, "select_n cases differ: " + types_str(in));
      if (!in[0].shape.empty() && in[0].shape != in[1].shape)
        fail_at(where, "select_n predicate shape does not match the cases: " + types_str(in));
      return {in[1]};
    }
    case Prim::kDotGeneral: return {dot_general_result(params, in, where)};
    case Prim::kReduceSum: case Prim::kReduceMax: {
      expect_arity(prim, in, 1, where);
      if (in[0].dtype == DType::kBool) fail_at(where, name + " does not take a bool operand");
      auto axes = param_ints(params, "axes", where);
      check_axes(prim, axes, in[0].rank(), where);
      Type t = in[0];
      t.shape.clear();
      for (int i = 0; i < in[0].rank(); ++i)
        if (std::find(axes.begin(), axes.end(), i) == axes.end()) t.shape.push_back(in[0].shape[i]);
      return {t};
    }
    case Prim::kBroadcastInDim: {
      expect_arity(prim, in, 1, where);
      Shape shape = param_ints(params, "shape", where);
      auto dims = param_ints(params, "broadcast_dimensions", where);
      if (static_cast<int>(dims.size()) != in[0].rank())
        fail_at(where, "broadcast_in_dim: broadcast_dimensions has " + std::to_string(dims.size()) +
                           " entries for an operand of rank " + std::to_string(in[0].rank()));
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(shape.size()) || (i && dims[i] <= dims[i - 1]))
          fail_at(where, "broadcast_in_dim: broadcast_dimensions must be increasing and within the output rank");
        if (in[0].shape[i] != 1 && in[0].shape[i] != shape[dims[i]])
          fail_at(where, "broadcast_in_dim: operand dim " + std::to_string(i) + " of size " +
                             std::to_string(in[0].shape[i]) + " cannot broadcast to " + std::to_string(shape[dims[i]]));
      }
      for (int64_t d : shape)
        if (d < 0) fail_at(where, "broadcast_in_dim: negative size in shape");
      return {Type{in[0].dtype, shape, MemorySpace::kDevice}};
    }
    case Prim::kReshape: {
      expect_arity(prim, in, 1, where);
      Shape shape = param_ints(params, "new_sizes", where);
      for (int64_t d : shape)
        if (d < 0) fail_at(where, "reshape: negative size in new_sizes");
      if (num_elements(shape) != in[0].num_elements())
        fail_at(where, "reshape: cannot reshape " + in[0].str() + " to " + shape_str(shape));
      return {Type{in[0].dtype, shape, MemorySpace::kDevice}};
    }
    case Prim::kTranspose: {
      expect_arity(prim, in, 1, where);
      auto perm = param_ints(params, "permutation", where);
      if (static_cast<int>(perm.size()) != in[0].rank())
        fail_at(where, "transpose: permutation length does not match rank " + std::to_string(in[0].rank()));
      check_axes(prim, perm, in[0].rank(), where);
      Type t = in[0];
      for (size_t i = 0; i < perm.size(); ++i) t.shape[i] = in[0].shape[perm[i]];
      return {t};
    }
    case Prim::kSqueeze: {
      expect_arity(prim, in, 1, where);
      auto dims = param_ints(params, "dimensions", where);
      check_axes(prim, dims, in[0].rank(), where);
      Type t = in[0];
      t.shape.clear();
      for (int i = 0; i < in[0].rank(); ++i) {
        bool squeezed = std::find(dims.begin(), dims.end(), i) != dims.end();
        if (squeezed && in[0].shape[i] != 1)
          fail_at(where, "squeeze: dimension " + std::to_string(i) + " has size " + std::to_string(in[0].shape[i]));
        if (!squeezed) t.shape.push_back(in[0].shape[i]);
      }
      return {t};
    }
    case Prim::kSoftmax: {
      expect_arity(prim, in, 1, where);
      expect_floating(prim, in[0], where);
      int64_t axis = param_int(params, "axis", where);
      if (axis < -in[0].rank() || axis >= in[0].rank() || in[0].rank() == 0)
        fail_at(where, "softmax: axis " + std::to_string(axis) + " is out of range for " + in[0].str());
      return {in[0]};
    }
    default: break;
  }
  internal_error("infer_types called for " + name);
}

}  // namespace rematkit
