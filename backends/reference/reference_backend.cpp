// The reference backend: plain scalar loops over host buffers, obviously correct, the oracle the
// other backends are checked against. Every value is computed in double and stored rounded to its
// dtype, each sum accumulating in double in row-major order; so it agrees bit for bit with the
// core's interpreter in f32 mode (which plugins cannot link).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::plugin::ArgumentError;
using rematkit::plugin::find_param;
using rematkit::plugin::guarded;
using rematkit::plugin::ints_of;
using Dims = std::vector<int64_t>;

struct Operand {
  int32_t dtype;
  Dims shape;
};

Operand operand_of(const rk_type& t) { return {t.dtype, Dims(t.shape, t.shape + t.rank)}; }

int64_t count(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Dims strides_of(const Dims& shape) {
  Dims s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

double load(const rk_tensor_view& t, int64_t i) {
  switch (t.type.dtype) {
    case RK_DTYPE_F32: return static_cast<const float*>(t.data)[i];
    case RK_DTYPE_I32: return static_cast<const int32_t*>(t.data)[i];
    default: return static_cast<const uint8_t*>(t.data)[i];
  }
}

void store(const rk_tensor_view& t, int64_t i, double v) {
  switch (t.type.dtype) {
    case RK_DTYPE_F32: static_cast<float*>(t.data)[i] = static_cast<float>(v); break;
    case RK_DTYPE_I32: {
      double r = std::isnan(v) ? 0 : std::trunc(v);
      r = std::clamp(r, -2147483648.0, 2147483647.0);
      static_cast<int32_t*>(t.data)[i] = static_cast<int32_t>(r);
      break;
    }
    default: static_cast<uint8_t*>(t.data)[i] = v != 0 ? 1 : 0;
  }
}

// A prepared equation: the primitive and its decoded params.
struct Kernel {
  std::string prim;
  std::vector<Operand> inputs, outputs;
  Dims a, b, c, d;  // per primitive: axes, dims, permutation, dot dimension numbers (lc, rc, lb, rb)
  int64_t y = 0;    // integer_pow's exponent, softmax's axis
};

const std::vector<std::string> kUnary = {"neg",  "exp",   "log",  "sin",      "cos",   "tanh",
                                         "logistic", "sqrt", "rsqrt", "square", "integer_pow", "relu",
                                         "name", "stop_gradient", "convert_element_type"};
const std::vector<std::string> kBinary = {"add", "sub", "mul", "div", "max", "min", "gt", "ge", "lt", "le", "eq", "ne"};
const std::vector<std::string> kOther = {"select_n", "dot_general", "reduce_sum", "reduce_max", "broadcast_in_dim",
                                         "reshape",  "squeeze",     "transpose",  "softmax"};

bool known(const std::string& p) {
  for (const auto* list : {&kUnary, &kBinary, &kOther})
    if (std::find(list->begin(), list->end(), p) != list->end()) return true;
  return false;
}

Dims param_ints(const rk_equation_view* e, const char* name) {
  const rk_value* v = find_param(e, name);
  if (!v) throw ArgumentError(std::string(e->primitive) + ": missing parameter " + name);
  return ints_of(*v);
}

Kernel prepare_kernel(const rk_equation_view* e) {
  Kernel k;
  k.prim = e->primitive;
  for (size_t i = 0; i < e->num_inputs; ++i) k.inputs.push_back(operand_of(e->inputs[i]));
  for (size_t i = 0; i < e->num_outputs; ++i) k.outputs.push_back(operand_of(e->outputs[i]));
  if (k.prim == "integer_pow") k.y = param_ints(e, "y").at(0);
  if (k.prim == "softmax") k.y = param_ints(e, "axis").at(0);
  if (k.prim == "reduce_sum" || k.prim == "reduce_max") k.a = param_ints(e, "axes");
  if (k.prim == "broadcast_in_dim") k.a = param_ints(e, "broadcast_dimensions");
  if (k.prim == "transpose") k.a = param_ints(e, "permutation");
  if (k.prim == "dot_general") {
    const rk_value* dn = find_param(e, "dimension_numbers");
    if (!dn || dn->num_items != 2) throw ArgumentError("dot_general: bad dimension_numbers");
    k.a = ints_of(dn->items[0].items[0]);
    k.b = ints_of(dn->items[0].items[1]);
    k.c = ints_of(dn->items[1].items[0]);
    k.d = ints_of(dn->items[1].items[1]);
  }
  return k;
}

double unary(const std::string& p, double x, int64_t y) {
  if (p == "neg") return -x;
  if (p == "exp") return std::exp(x);
  if (p == "log") return std::log(x);
  if (p == "sin") return std::sin(x);
  if (p == "cos") return std::cos(x);
  if (p == "tanh") return std::tanh(x);
  if (p == "logistic") return 1.0 / (1.0 + std::exp(-x));
  if (p == "sqrt") return std::sqrt(x);
  if (p == "rsqrt") return 1.0 / std::sqrt(x);
  if (p == "square") return x * x;
  if (p == "relu") return std::isnan(x) ? x : (x > 0 ? x : 0.0);
  if (p == "integer_pow") {
    double r = 1.0;
    for (int64_t i = 0; i < (y < 0 ? -y : y); ++i) r *= x;
    return y < 0 ? 1.0 / r : r;
  }
  return x;  // name, stop_gradient, convert_element_type
}

double binary(const std::string& p, double a, double b, int32_t dtype) {
  if (p == "add") return a + b;
  if (p == "sub") return a - b;
  if (p == "mul") return a * b;
  if (p == "div") return dtype == RK_DTYPE_I32 ? (b == 0 ? 0 : std::trunc(a / b)) : a / b;
  if (p == "max") return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
  if (p == "min") return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
  if (p == "gt") return a > b;
  if (p == "ge") return a >= b;
  if (p == "lt") return a < b;
  if (p == "le") return a <= b;
  if (p == "eq") return a == b;
  return a != b;
}

// The flat index of operand `shape` (rank 0, or size-1 dims broadcast) at output position `i`.
int64_t broadcast_index(const Dims& shape, const Dims& out, int64_t i) {
  if (shape.empty()) return 0;
  const Dims s = strides_of(shape);
  int64_t idx = 0;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) idx += (i % out[d]) * s[d];
    i /= out[d];
  }
  return idx;
}

Dims coords(int64_t i, const Dims& shape) {
  Dims c(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

bool in(const Dims& list, int64_t v) { return std::find(list.begin(), list.end(), v) != list.end(); }

void run_dot(const Kernel& k, const rk_tensor_view& l, const rk_tensor_view& r, const rk_tensor_view& o) {
  const Dims& ls = k.inputs[0].shape;
  const Dims& rs = k.inputs[1].shape;
  const Dims lst = strides_of(ls), rst = strides_of(rs);
  Dims lfree, rfree, cshape;
  for (int64_t d = 0; d < static_cast<int64_t>(ls.size()); ++d)
    if (!in(k.a, d) && !in(k.c, d)) lfree.push_back(d);
  for (int64_t d = 0; d < static_cast<int64_t>(rs.size()); ++d)
    if (!in(k.b, d) && !in(k.d, d)) rfree.push_back(d);
  for (int64_t d : k.a) cshape.push_back(ls[d]);
  const Dims& out = k.outputs[0].shape;
  for (int64_t i = 0; i < count(out); ++i) {
    const Dims c = coords(i, out);
    int64_t lb = 0, rb = 0;
    size_t at = 0;
    for (size_t j = 0; j < k.c.size(); ++j, ++at) lb += c[at] * lst[k.c[j]], rb += c[at] * rst[k.d[j]];
    for (int64_t d : lfree) lb += c[at++] * lst[d];
    for (int64_t d : rfree) rb += c[at++] * rst[d];
    double acc = 0;
    for (int64_t t = 0; t < count(cshape); ++t) {
      const Dims cc = coords(t, cshape);
      int64_t lo = lb, ro = rb;
      for (size_t j = 0; j < cc.size(); ++j) lo += cc[j] * lst[k.a[j]], ro += cc[j] * rst[k.b[j]];
      acc += load(l, lo) * load(r, ro);
    }
    store(o, i, acc);
  }
}

void run(const Kernel& k, const rk_tensor_view* in_views, const rk_tensor_view* out_views) {
  const rk_tensor_view& o = out_views[0];
  const Dims& out = k.outputs[0].shape;
  const int64_t n = count(out);
  const std::string& p = k.prim;
  if (std::find(kUnary.begin(), kUnary.end(), p) != kUnary.end()) {
    for (int64_t i = 0; i < n; ++i) store(o, i, unary(p, load(in_views[0], i), k.y));
  } else if (std::find(kBinary.begin(), kBinary.end(), p) != kBinary.end()) {
    for (int64_t i = 0; i < n; ++i)
      store(o, i, binary(p, load(in_views[0], broadcast_index(k.inputs[0].shape, out, i)),
                         load(in_views[1], broadcast_index(k.inputs[1].shape, out, i)), k.inputs[0].dtype));
  } else if (p == "select_n") {
    const int64_t cases = static_cast<int64_t>(k.inputs.size()) - 1;
    for (int64_t i = 0; i < n; ++i) {
      int64_t which = static_cast<int64_t>(load(in_views[0], k.inputs[0].shape.empty() ? 0 : i));
      which = std::clamp<int64_t>(which, 0, cases - 1);
      store(o, i, load(in_views[1 + which], i));
    }
  } else if (p == "dot_general") {
    run_dot(k, in_views[0], in_views[1], o);
  } else if (p == "reduce_sum" || p == "reduce_max") {
    const bool is_max = p == "reduce_max";
    const double init = !is_max ? 0.0
                        : k.outputs[0].dtype == RK_DTYPE_I32 ? -2147483648.0
                                                             : -std::numeric_limits<double>::infinity();
    std::vector<double> acc(static_cast<size_t>(n), init);
    const Dims& shape = k.inputs[0].shape;
    const Dims ost = strides_of(out);
    for (int64_t i = 0; i < count(shape); ++i) {
      const Dims c = coords(i, shape);
      int64_t oi = 0, at = 0;
      for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
        if (!in(k.a, d)) oi += c[d] * ost[at++];
      const double v = load(in_views[0], i);
      if (!is_max) acc[oi] += v;
      else if (!std::isnan(acc[oi]) && (std::isnan(v) || v > acc[oi])) acc[oi] = v;
    }
    for (int64_t i = 0; i < n; ++i) store(o, i, acc[i]);
  } else if (p == "broadcast_in_dim") {
    const Dims& shape = k.inputs[0].shape;
    const Dims st = strides_of(shape);
    for (int64_t i = 0; i < n; ++i) {
      const Dims c = coords(i, out);
      int64_t idx = 0;
      for (size_t j = 0; j < k.a.size(); ++j)
        if (shape[j] != 1) idx += c[k.a[j]] * st[j];
      store(o, i, load(in_views[0], idx));
    }
  } else if (p == "reshape" || p == "squeeze") {
    for (int64_t i = 0; i < n; ++i) store(o, i, load(in_views[0], i));
  } else if (p == "transpose") {
    const Dims st = strides_of(k.inputs[0].shape);
    for (int64_t i = 0; i < n; ++i) {
      const Dims c = coords(i, out);
      int64_t idx = 0;
      for (size_t d = 0; d < c.size(); ++d) idx += c[d] * st[k.a[d]];
      store(o, i, load(in_views[0], idx));
    }
  } else if (p == "softmax") {
    const Dims& shape = k.inputs[0].shape;
    const int64_t axis = k.y < 0 ? k.y + static_cast<int64_t>(shape.size()) : k.y;
    const Dims st = strides_of(shape);
    const int64_t len = shape[axis], step = st[axis];
    for (int64_t i = 0; i < n; ++i) {
      if (coords(i, shape)[axis] != 0) continue;  // once per row along the axis
      double m = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < len; ++j) m = std::max(m, load(in_views[0], i + j * step));
      std::vector<double> e(static_cast<size_t>(len));
      for (int64_t j = 0; j < len; ++j) sum += (e[j] = std::exp(load(in_views[0], i + j * step) - m));
      for (int64_t j = 0; j < len; ++j) store(o, i + j * step, e[j] / sum);
    }
  }
}

rk_error* create(const rk_value*, size_t, rk_backend** out) {
  static int instance;
  *out = reinterpret_cast<rk_backend*>(&instance);  // stateless
  return nullptr;
}
void destroy(rk_backend*) {}
int32_t supports(const rk_backend*, const rk_equation_view* e) { return known(e->primitive) ? 1 : 0; }
rk_error* prepare(rk_backend*, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    if (!known(e->primitive)) throw ArgumentError(std::string("unsupported primitive ") + e->primitive);
    *kernel = reinterpret_cast<rk_kernel*>(new Kernel(prepare_kernel(e)));
    *workspace_bytes = 0;
  });
}
rk_error* execute(rk_kernel* kernel, const rk_tensor_view* inputs, size_t, const rk_tensor_view* outputs, size_t, void*,
                  size_t) {
  return guarded([&] { run(*reinterpret_cast<const Kernel*>(kernel), inputs, outputs); });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Kernel*>(kernel); }

const rk_backend_api kBackend = {sizeof(rk_backend_api), "reference", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy};
const rk_backend_api* const kBackends[] = {&kBackend};
const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "reference-backend", "1.0.0",
                            &rematkit::plugin::remember_host, 0, nullptr, 1, kBackends};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
