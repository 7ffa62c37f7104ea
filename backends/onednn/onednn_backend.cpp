// The oneDNN backend plugin (oneDNN 2.6, whose CPU runtime is OpenMP): conv_general_dilated and
// the window max and sum as convolutions and pooling (onednn_windows.cpp); dot_general through
// dnnl::matmul, 2-D and batched, whenever each operand's batch, free and contracted dims read as
// one strided dim each (transposed operands and [B, S, D] activations included, never copied);
// f32 elementwise primitives through dnnl::eltwise_forward and dnnl::binary (whose second source
// may broadcast; a broadcast first source of a commutative op is swapped there).
// Primitives are created when an equation is prepared, and cached by shape; each takes its scratchpad
// from the kernel's workspace (scratchpad_mode::user), so oneDNN allocates none. Threads: each execute() sets the
// calling thread's OpenMP team to the backend's num_threads option (default: every core), so a
// scheduler that runs several programs at once gives each a share and never oversubscribes the cores.
// Equations it does not run are declined when asked and go to the next backend listed.
#include <omp.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <thread>
#include <vector>

#include "onednn_recipe.hpp"
#include "rematkit/plugin/fusion_view.hpp"
#include "rematkit/plugin/measured_cost.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::Prim;
using rematkit::plugin::ArgumentError;
using rematkit::plugin::guarded;
using Dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

struct Backend {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // bf16 products where the CPU has AVX512_BF16; with bf16_matmul=emulated also on AVX-512 cores
  // without it (oneDNN converts in software: for checking this path on such a machine).
  bool bf16_emulated = false;
  std::mutex mutex;                             // guards the cache: programs may be built in parallel
  std::map<std::string, dnnl::primitive> cache;  // by operation, shapes and strides
};

// A prepared primitive and the arguments it takes: (DNNL_ARG_*, memory descriptor) for each of the
// equation's inputs, then its output.
struct Kernel {
  Backend* backend;
  int threads = 1;  // the backend's num_threads, or 1 where a second thread costs more than it saves
  dnnl::primitive primitive;
  std::vector<std::pair<int, dnnl::memory::desc>> inputs;
  std::pair<int, dnnl::memory::desc> output;
  // Made once at prepare time; execute() only points the memories at the step's buffers, as
  // creating a stream and memory objects per call costs more than a small primitive runs, and
  // allocates.
  std::mutex running;  // one execute() of this kernel at a time: the memories below are shared
  dnnl::stream stream;
  std::vector<dnnl::memory> memories;  // the inputs', then the output's, then the scratchpad's if any
  std::vector<dnnl_exec_arg_t> args;   // (DNNL_ARG_*, memory) of each
  int staged = -1;  // an input read from the workspace, where stage() rearranges it (Recipe::stage)
  std::function<void(const void*, void*)> stage;
  std::function<void(void*, void*)> unstage;  // the output, written in the workspace (Recipe::unstage)
  size_t scratchpad_at = 0, scratchpad = 0;  // where oneDNN's scratchpad lies in the workspace, its bytes
};

using rematkit_onednn::Recipe;  // a primitive to build for an equation (onednn_recipe.hpp)
using rematkit_onednn::user_scratchpad;

dnnl::memory::desc row_major(const Dims& shape) {
  Dims dims = shape.empty() ? Dims{1} : shape;  // oneDNN has no rank-0 tensors
  Dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, dt::f32, strides);
}

// An operand of a matrix product as oneDNN sees it: logical dims (batch, rows, cols) and the
// strides that read them from the row-major buffer.
struct Layout {
  Dims dims, strides;
};

// A group of an operand's dims read as one dim: their total size and the stride that steps through
// them, when the dims (in the group's order) lie in memory as one does; size-1 dims fit anywhere.
bool collapse(const Dims& shape, const Dims& group, int64_t& size, int64_t& stride) {
  Dims st(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * shape[i + 1];
  size = 1;
  stride = 1;
  bool first = true;
  for (auto d = group.rbegin(); d != group.rend(); ++d) {
    if (shape[*d] == 1) continue;
    if (!first && st[*d] != stride * size) return false;
    if (first) stride = st[*d];
    first = false;
    size *= shape[*d];
  }
  return true;
}

// Whether oneDNN multiplies bf16 here: natively (AVX512_BF16 or AMX); with `emulated`, on any
// AVX-512 core. Elsewhere bf16 products are left to the next backend.
bool has_bf16(bool emulated) {
  auto has = [](dnnl::cpu_isa wanted) {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa()), w = static_cast<unsigned>(wanted);
    return (isa & w) == w;
  };
  static const bool native = has(dnnl::cpu_isa::avx512_core_bf16), avx512 = has(dnnl::cpu_isa::avx512_core);
  return native || (emulated && avx512);
}

dt data_type_of(int32_t dtype) { return dtype == RK_DTYPE_BF16 ? dt::bf16 : dt::f32; }

// The dims of `shape` in none of the lists, in order: an operand's free dims.
Dims free_dims(const Dims& shape, const Dims& contract, const Dims& batch) {
  Dims out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (std::find(contract.begin(), contract.end(), d) == contract.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      out.push_back(d);
  return out;
}

// dot_general as one (batched) matmul: each operand's batch dims, free dims and contracted dims must
// each read as one strided dim (a [B, S, D] activation times a [D, F] weight is (B*S, D) x (D, F);
// attention's [B, H, S, Dh] products batch over B*H), and transposes are strides, never copies.
// Operands f32, or bf16 on a CPU with AVX512_BF16 (oneDNN's bf16 matmul accumulates in f32; the
// result is f32 with preferred_element_type=float32, else rounded to bf16).
bool matmul_layouts(const Backend& backend, const rk_equation_view* e, Layout& a, Layout& b, Layout& c) {
  if (rematkit::plugin::primitive_of(e) != Prim::kDotGeneral || e->num_inputs != 2 || e->num_outputs != 1) return false;
  const int32_t in = e->inputs[0].dtype, out = e->outputs[0].dtype;
  if (e->inputs[1].dtype != in) return false;
  const bool bf16 = has_bf16(backend.bf16_emulated);
  if (in == RK_DTYPE_F32 ? out != RK_DTYPE_F32 : !(in == RK_DTYPE_BF16 && bf16 && (out == RK_DTYPE_F32 || out == RK_DTYPE_BF16)))
    return false;
  const rematkit::DotDims dims = rematkit::plugin::dot_dims(e);
  const Dims lc(dims.lhs_contract.begin(), dims.lhs_contract.end()), rc(dims.rhs_contract.begin(), dims.rhs_contract.end());
  const Dims lb(dims.lhs_batch.begin(), dims.lhs_batch.end()), rb(dims.rhs_batch.begin(), dims.rhs_batch.end());
  const Dims ls(e->inputs[0].shape, e->inputs[0].shape + e->inputs[0].rank);
  const Dims rs(e->inputs[1].shape, e->inputs[1].shape + e->inputs[1].rank);
  for (const Dims* shape : {&ls, &rs})
    for (int64_t d : *shape)
      if (d == 0) return false;
  int64_t m = 1, n = 1, k = 1, k_r = 1;
  int64_t sm, sn, sk_l, sk_r;
  if (!collapse(ls, free_dims(ls, lc, lb), m, sm) || !collapse(rs, free_dims(rs, rc, rb), n, sn) ||
      !collapse(ls, lc, k, sk_l) || !collapse(rs, rc, k_r, sk_r) || k != k_r)
    return false;
  // The batch as one strided dim, or else each batch dim as its own (attention's p v with v still
  // [B, S, H, Dh]: batch dims B and H, strides S*H*Dh and Dh, which no one stride steps through).
  Dims batch, sb_l, sb_r;
  int64_t batch_l = 1, batch_r = 1, stride_l = 1, stride_r = 1;
  if (collapse(ls, lb, batch_l, stride_l) && collapse(rs, rb, batch_r, stride_r)) {
    if (batch_l != batch_r) return false;
    if (!lb.empty()) batch = {batch_l}, sb_l = {stride_l}, sb_r = {stride_r};
  } else {
    for (size_t i = 0; i < lb.size(); ++i) {
      collapse(ls, {lb[i]}, batch_l, stride_l);
      collapse(rs, {rb[i]}, batch_r, stride_r);
      if (batch_l != batch_r) return false;
      batch.push_back(batch_l), sb_l.push_back(stride_l), sb_r.push_back(stride_r);
    }
  }
  auto with_batch = [&](const Dims& batch_part, Dims tail) {
    Dims all = batch_part;
    all.insert(all.end(), tail.begin(), tail.end());
    return all;
  };
  Dims sc(batch.size(), 0);  // dot_general's (batch, lhs free, rhs free), row-major
  for (size_t i = batch.size(); i-- > 0;) sc[i] = (i + 1 < batch.size() ? sc[i + 1] * batch[i + 1] : m * n);
  a = {with_batch(batch, {m, k}), with_batch(sb_l, {sm, sk_l})};
  b = {with_batch(batch, {k, n}), with_batch(sb_r, {sk_r, sn})};
  c = {with_batch(batch, {m, n}), with_batch(sc, {n, 1})};
  return true;
}

std::string key_of(const std::string& op, std::initializer_list<const Dims*> parts) {
  std::string k = op;
  for (const Dims* d : parts) {
    k += ";";
    for (int64_t x : *d) k += std::to_string(x) + ",";
  }
  return k;
}

Dims shape_of(const rk_type& t) { return Dims(t.shape, t.shape + t.rank); }

int64_t count(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

bool all_f32_nonempty(const rk_equation_view* e) {
  for (size_t i = 0; i < e->num_inputs; ++i) {
    if (e->inputs[i].dtype != RK_DTYPE_F32) return false;
    for (int32_t d = 0; d < e->inputs[i].rank; ++d)
      if (e->inputs[i].shape[d] == 0) return false;
  }
  return e->num_outputs == 1 && e->outputs[0].dtype == RK_DTYPE_F32;
}

struct EltwiseOp {
  Prim primitive;
  dnnl::algorithm algorithm;
  float alpha, beta;
};
// Not log: oneDNN 2.6's f32 eltwise_log errs by up to 6144 ulp near log(1) on this CPU (measured by
// the conformance test); it is left to the next backend listed.
const EltwiseOp kEltwise[] = {
    {Prim::kExp, dnnl::algorithm::eltwise_exp, 0, 0},
    {Prim::kTanh, dnnl::algorithm::eltwise_tanh, 0, 0},     {Prim::kLogistic, dnnl::algorithm::eltwise_logistic, 0, 0},
    {Prim::kSqrt, dnnl::algorithm::eltwise_sqrt, 0, 0},     {Prim::kSquare, dnnl::algorithm::eltwise_square, 0, 0},
    {Prim::kRelu, dnnl::algorithm::eltwise_relu, 0, 0},     {Prim::kNeg, dnnl::algorithm::eltwise_linear, -1, 0},
    {Prim::kRsqrt, dnnl::algorithm::eltwise_pow, 1, -0.5f}};
const std::pair<Prim, dnnl::algorithm> kBinary[] = {
    {Prim::kAdd, dnnl::algorithm::binary_add}, {Prim::kSub, dnnl::algorithm::binary_sub},
    {Prim::kMul, dnnl::algorithm::binary_mul}, {Prim::kDiv, dnnl::algorithm::binary_div},
    {Prim::kMax, dnnl::algorithm::binary_max}, {Prim::kMin, dnnl::algorithm::binary_min}};

// A fused product (rematkit/plugin/fusion_view.hpp) as one matmul: a first add of a [N] or [1, N]
// operand as its bias, then a chain of eltwise ops and binary ops with an operand as post-ops, each
// part reading the one before, the last part's value the only result. oneDNN adds the bias to the
// f32 accumulator and applies the post-ops to it before the one store.
bool fused_matmul_recipe(const Backend& backend, const rk_equation_view* e, Recipe& r) {
  const auto fusion = rematkit::plugin::Fusion::of(e);
  if (!fusion || fusion->parts().front().prim != Prim::kDotGeneral || fusion->results().size() != 1 ||
      fusion->results()[0] != static_cast<int64_t>(fusion->num_values()) - 1)
    return false;
  Layout a, b, c;
  if (!matmul_layouts(backend, fusion->part_equation(0).get(), a, b, c)) return false;
  const dt in = data_type_of(e->inputs[0].dtype);
  if (in != dt::f32 || e->outputs[0].dtype != RK_DTYPE_F32) return false;
  const std::vector<int64_t>& out_shape = fusion->parts().front().shape;
  const size_t inputs = fusion->num_inputs();
  std::vector<int> arg_of(inputs, -1);  // per equation input: its DNNL_ARG_*
  std::vector<dnnl::memory::desc> desc_of(inputs);
  auto take = [&](int64_t v, int arg, const dnnl::memory::desc& md) {
    if (v >= static_cast<int64_t>(inputs) || arg_of[static_cast<size_t>(v)] >= 0) return false;  // one argument each
    arg_of[static_cast<size_t>(v)] = arg;
    desc_of[static_cast<size_t>(v)] = md;
    return true;
  };
  const std::vector<int64_t>& ops = fusion->parts().front().operands;
  if (!take(ops[0], DNNL_ARG_SRC, dnnl::memory::desc(a.dims, in, a.strides)) ||
      !take(ops[1], DNNL_ARG_WEIGHTS, dnnl::memory::desc(b.dims, in, b.strides)))
    return false;
  const dnnl::memory::desc cm(c.dims, dt::f32, c.strides);
  dnnl::memory::desc bias;
  dnnl::post_ops post;
  std::string key = key_of("matmul-fused", {&a.dims, &a.strides, &b.dims, &b.strides});
  for (size_t j = 1; j < fusion->parts().size(); ++j) {
    const rematkit::plugin::FusedPart& p = fusion->parts()[j];
    const int64_t previous = static_cast<int64_t>(inputs + j - 1);
    if (!p.prim || p.shape != out_shape || p.dtype != RK_DTYPE_F32 || fusion->readers(previous) != 1) return false;
    key += std::string(";") + p.primitive;
    const EltwiseOp* eltwise = nullptr;
    for (const EltwiseOp& op : kEltwise)
      if (op.primitive == *p.prim) eltwise = &op;
    if (eltwise && p.operands.size() == 1 && p.operands[0] == previous) {
      post.append_eltwise(1.0f, eltwise->algorithm, eltwise->alpha, eltwise->beta);
      continue;
    }
    if (p.operands.size() != 2) return false;
    // The operand that is not the chain's: an input of the output's shape, or one broadcast from
    // [N] / [1, N] (with size-1 dims in front to the output's rank).
    const bool chain_first = p.operands[0] == previous;
    if (!chain_first && p.operands[1] != previous) return false;
    const int64_t other = chain_first ? p.operands[1] : p.operands[0];
    if (other >= static_cast<int64_t>(inputs) || fusion->dtype(other) != RK_DTYPE_F32) return false;
    const std::vector<int64_t>& os = fusion->shape(other);
    const int64_t n = c.dims.back();
    const bool row = count(os) == n && !os.empty() && os.back() == n;
    if (!row && os != out_shape) return false;
    Dims operand_dims = c.dims;
    if (row) std::fill(operand_dims.begin(), operand_dims.end() - 1, 1);
    const dnnl::memory::desc om = row_major(operand_dims);
    if (*p.prim == Prim::kAdd && j == 1 && row) {  // the bias
      bias = om;
      if (!take(other, DNNL_ARG_BIAS, om)) return false;
      key += "-bias";
      continue;
    }
    const bool commutes = *p.prim == Prim::kAdd || *p.prim == Prim::kMul || *p.prim == Prim::kMax || *p.prim == Prim::kMin;
    if (!chain_first && !commutes) return false;  // oneDNN's binary post-op is chain op operand
    const dnnl::algorithm* algorithm = nullptr;
    for (const auto& [prim, alg] : kBinary)
      if (prim == *p.prim) algorithm = &alg;
    if (!algorithm || !take(other, DNNL_ARG_ATTR_MULTIPLE_POST_OP(post.len()) | DNNL_ARG_SRC_1, om)) return false;
    post.append_binary(*algorithm, om);
    key += row ? "-row" : "-full";
  }
  for (size_t i = 0; i < inputs; ++i)
    if (arg_of[i] < 0) return false;
  const dnnl::memory::desc am = desc_of[static_cast<size_t>(ops[0])], bm = desc_of[static_cast<size_t>(ops[1])];
  r = {key, {}, {DNNL_ARG_DST, cm}, [am, bm, bias, cm, post](const dnnl::engine& eng) -> dnnl::primitive {
         dnnl::primitive_attr attr;
         attr.set_post_ops(post);
         const dnnl::matmul::desc d = bias ? dnnl::matmul::desc(am, bm, bias, cm) : dnnl::matmul::desc(am, bm, cm);
         return dnnl::matmul(dnnl::matmul::primitive_desc(d, user_scratchpad(attr), eng));
       }};
  for (size_t i = 0; i < inputs; ++i) r.inputs.emplace_back(arg_of[i], desc_of[i]);
  r.work = count(c.dims) * a.dims.back();
  return true;
}

// How oneDNN runs `e`, or false when this backend does not.
bool recipe_for(const Backend& backend, const rk_equation_view* e, Recipe& r) {
  if (fused_matmul_recipe(backend, e, r)) return true;
  Layout a, b, c;
  if (matmul_layouts(backend, e, a, b, c)) {
    const dt in = data_type_of(e->inputs[0].dtype), out = data_type_of(e->outputs[0].dtype);
    const dnnl::memory::desc am(a.dims, in, a.strides), bm(b.dims, in, b.strides), cm(c.dims, out, c.strides);
    if (a.dims.size() > 3) {  // several batch dims: declined where oneDNN would run its reference code
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(am, bm, cm), user_scratchpad(), backend.engine);
      if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;
    }
    r = {key_of(std::string("matmul") + (in == dt::bf16 ? (out == dt::bf16 ? "-bf16" : "-bf16f32") : ""),
                {&a.dims, &a.strides, &b.dims, &b.strides}), {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}},
         {DNNL_ARG_DST, cm}, [am, bm, cm](const dnnl::engine& eng) -> dnnl::primitive {
           // The oneDNN 2.x API: an operation descriptor, then its primitive descriptor.
           return dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(am, bm, cm), user_scratchpad(), eng));
         }};
    r.work = count(c.dims) * a.dims.back();
    return true;
  }
  if (rematkit_onednn::convolution_recipe(backend.engine, e, r) || rematkit_onednn::pooling_recipe(backend.engine, e, r))
    return true;
  const std::optional<Prim> prim = rematkit::plugin::primitive_of(e);
  if (!prim || !all_f32_nonempty(e)) return false;
  const Prim p = *prim;
  const std::string name = e->primitive;
  const Dims out = shape_of(e->outputs[0]);
  for (const EltwiseOp& op : kEltwise) {
    if (p != op.primitive) continue;
    const dnnl::memory::desc md = row_major(out);
    r = {key_of(name, {&out}), {{DNNL_ARG_SRC, md}}, {DNNL_ARG_DST, md}, [md, op](const dnnl::engine& eng) -> dnnl::primitive {
           return dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(
               dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, op.algorithm, md, op.alpha, op.beta),
               user_scratchpad(), eng));
         }};
    return true;
  }
  for (const auto& [binary, algorithm] : kBinary) {
    if (p != binary) continue;
    // Operands as oneDNN wants them: the output's rank, size-1 dims broadcasting (rank 0: all 1).
    auto as_out_rank = [&](Dims shape) { return shape.empty() ? Dims(out.size(), 1) : shape; };
    Dims s0 = as_out_rank(shape_of(e->inputs[0])), s1 = as_out_rank(shape_of(e->inputs[1]));
    int arg0 = DNNL_ARG_SRC_0, arg1 = DNNL_ARG_SRC_1;
    if (s0 != out) {  // only the second source may broadcast: swap commutative operands
      const bool commutes = algorithm == dnnl::algorithm::binary_add || algorithm == dnnl::algorithm::binary_mul ||
                            algorithm == dnnl::algorithm::binary_max || algorithm == dnnl::algorithm::binary_min;
      if (!commutes || s1 != out) return false;
      std::swap(s0, s1);
      std::swap(arg0, arg1);
    }
    const dnnl::memory::desc m0 = row_major(s0), m1 = row_major(s1), md = row_major(out);
    // oneDNN 2.6 runs some broadcasts with its reference implementation (a [B, H, S, 1] operand of
    // a softmax's [B, H, S, S], far slower than Highway; docs/performance.md has the figures):
    // those are declined, for the next backend listed.
    const dnnl::binary::primitive_desc pd(dnnl::binary::desc(algorithm, m0, m1, md), user_scratchpad(), backend.engine);
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;
    // inputs[i] is the equation's operand i, whichever oneDNN source it feeds.
    r = {key_of(name, {&s0, &s1, &out}), {{arg0, arg0 == DNNL_ARG_SRC_0 ? m0 : m1}, {arg1, arg1 == DNNL_ARG_SRC_0 ? m0 : m1}},
         {DNNL_ARG_DST, md}, [m0, m1, md, algorithm = algorithm](const dnnl::engine& eng) -> dnnl::primitive {
           return dnnl::binary(dnnl::binary::primitive_desc(dnnl::binary::desc(algorithm, m0, m1, md), user_scratchpad(), eng));
         }};
    return true;
  }
  return false;
}

rk_error* create(const rk_value* options, size_t n, rk_backend** out) {
  return guarded([&] {
    auto backend = std::make_unique<Backend>();
    for (size_t i = 0; i < n; ++i) {
      const std::string name = options[i].name ? options[i].name : "";
      if (name == "num_threads" && options[i].kind == RK_VALUE_INT && options[i].int_value >= 1) {
        backend->threads = static_cast<int>(options[i].int_value);
      } else if (name == "bf16_matmul" && options[i].kind == RK_VALUE_STRING &&
                 (std::string(options[i].string_value) == "native" || std::string(options[i].string_value) == "emulated")) {
        backend->bf16_emulated = std::string(options[i].string_value) == "emulated";
      } else {
        throw ArgumentError("the onednn backend takes num_threads=N (N >= 1) and bf16_matmul='native' or 'emulated'");
      }
    }
    rematkit::plugin::log(RK_LOG_DEBUG, "onednn: an OpenMP team of up to " + std::to_string(backend->threads) +
                                            " thread(s) per product");
    *out = reinterpret_cast<rk_backend*>(backend.release());
  });
}
void destroy(rk_backend* backend) { delete reinterpret_cast<Backend*>(backend); }

int32_t supports(const rk_backend* handle, const rk_equation_view* e) {
  try {  // supports() never fails: an equation it cannot read is one it does not run
    Recipe r;
    if (rematkit::plugin::has_complex_operand(e)) return 0;  // real arithmetic only
    return recipe_for(*reinterpret_cast<const Backend*>(handle), e, r) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

// One call's time on one thread, from rematkit_kernels_bench's elementwise/onednn rows (the sitting
// is in docs/performance.md): a call's fixed cost comes before any work, so Highway takes the small
// ones (products, convolutions and pooling: no estimate, they stay here).
double expected_ns(const rk_backend*, const rk_equation_view* e) {
  try {
    const std::optional<Prim> prim = rematkit::plugin::primitive_of(e);
    if (!prim || e->num_outputs != 1 || !all_f32_nonempty(e)) return -1;
    const double n = static_cast<double>(count(shape_of(e->outputs[0])));
    if (*prim == Prim::kExp)  // elementwise/onednn/exp: its polynomial runs at the add's speed
      return rematkit::plugin::measured_ns({{256, 232}, {2048, 517}, {16384, 2710}, {131072, 23400}}, n);
    for (const EltwiseOp& op : kEltwise)  // tanh's, measured; the others are of its kind
      if (*prim == op.primitive) return rematkit::plugin::measured_ns({{256, 427}, {2048, 913}, {16384, 4970}, {131072, 26900}}, n);
    // An operand with size-1 dims: one value per row (elementwise/onednn/sub_per_row), or one row
    // for all, the last dim kept (elementwise/onednn/add_each_row: a bias beside NHWC, which
    // oneDNN 2.6's binary runs several times slower).
    bool broadcast = false, each_row = false;
    const Dims out_shape = shape_of(e->outputs[0]);
    for (size_t i = 0; i < e->num_inputs; ++i) {
      const Dims in_shape = shape_of(e->inputs[i]);
      if (e->inputs[i].rank == 0 || count(in_shape) == count(out_shape)) continue;
      broadcast = true;
      each_row = each_row || (in_shape.back() == out_shape.back() && in_shape.back() > 1);
    }
    for (const auto& binary : kBinary)
      if (*prim == binary.first) {
        if (each_row) return rematkit::plugin::measured_ns({{4096, 3320}, {32768, 22100}, {98304, 50900}, {393216, 174000}}, n);
        return broadcast ? rematkit::plugin::measured_ns({{4096, 959}, {32768, 2540}, {98304, 8760}, {393216, 26600}}, n)
                         : rematkit::plugin::measured_ns({{256, 622}, {2048, 710}, {16384, 2050}, {131072, 13700}}, n);
      }
    return -1;
  } catch (...) {
    return -1;
  }
}

rk_error* prepare(rk_backend* handle, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    Backend& backend = *reinterpret_cast<Backend*>(handle);
    Recipe r;
    if (!recipe_for(backend, e, r)) throw std::runtime_error(std::string("onednn does not run ") + e->primitive + " in this form");
    auto k = std::make_unique<Kernel>();
    k->backend = &backend;
    // A second OpenMP thread costs a fork, a join and a colder cache: below 16 M multiply-adds (a
    // 32x512x512 product ran an MLP step faster alone, measured by rematkit_training_step_bench;
    // docs/performance.md has the figures) or 64 Ki elements, one thread runs the primitive.
    const int64_t work = r.work > 0 ? r.work : count(r.output.second.dims());
    k->threads = work < (r.work > 0 ? int64_t{1} << 24 : int64_t{1} << 16) ? 1 : backend.threads;
    // oneDNN fixes the threads a primitive splits its work over, and sizes its scratchpad for them,
    // when its descriptor is made, from this thread's OpenMP setting: the recipe is made again for
    // the team execute() gives it, whatever ran on this thread before (convolutions and pooling
    // make their descriptors in recipe_for, products and elementwise ones in make below).
    omp_set_num_threads(k->threads);
    r = Recipe{};
    if (!recipe_for(backend, e, r))
      throw std::runtime_error(std::string("onednn does not run ") + e->primitive + " on " + std::to_string(k->threads) +
                               " thread(s)");
    k->inputs = r.inputs;
    k->output = r.output;
    k->staged = r.staged;
    k->stage = r.stage;
    k->unstage = r.unstage;
    std::lock_guard<std::mutex> lock(backend.mutex);
    auto [it, fresh] = backend.cache.try_emplace(r.key);
    if (fresh) it->second = r.make(backend.engine);
    k->primitive = it->second;
    k->stream = dnnl::stream(backend.engine);
    for (const auto& [arg, desc] : k->inputs) {
      k->memories.emplace_back(desc, backend.engine, nullptr);
      k->args.push_back({arg, k->memories.back().get()});
    }
    k->memories.emplace_back(k->output.second, backend.engine, nullptr);
    k->args.push_back({k->output.first, k->memories.back().get()});
    // The scratchpad, after what the recipe stages in the workspace, on a cache line of its own.
    const dnnl::memory::desc scratchpad = rematkit_onednn::scratchpad_desc(k->primitive);
    k->scratchpad = scratchpad.get_size();
    k->scratchpad_at = k->scratchpad ? rematkit_onednn::cache_lines(r.workspace_bytes) : r.workspace_bytes;
    if (k->scratchpad) {
      k->memories.emplace_back(scratchpad, backend.engine, nullptr);
      k->args.push_back({DNNL_ARG_SCRATCHPAD, k->memories.back().get()});
    }
    *workspace_bytes = k->scratchpad_at + k->scratchpad;
    *kernel = reinterpret_cast<rk_kernel*>(k.release());
  });
}

rk_error* execute(rk_kernel* handle, const rk_tensor_view* in, size_t, const rk_tensor_view* out, size_t, void* workspace,
                  size_t) {
  return guarded([&] {
    Kernel& k = *reinterpret_cast<Kernel*>(handle);
    omp_set_num_threads(k.threads);  // this calling thread's OpenMP team
    std::lock_guard<std::mutex> lock(k.running);
    for (size_t i = 0; i < k.inputs.size(); ++i) k.memories[i].set_data_handle(in[i].data);
    if (k.staged >= 0) {
      k.stage(in[k.staged].data, workspace);
      k.memories[static_cast<size_t>(k.staged)].set_data_handle(workspace);
    }
    k.memories[k.inputs.size()].set_data_handle(k.unstage ? workspace : out[0].data);
    if (k.scratchpad) k.memories.back().set_data_handle(static_cast<std::byte*>(workspace) + k.scratchpad_at);
    rematkit_onednn::execute(k.primitive, k.stream, k.args);
    k.stream.wait();
    if (k.unstage) k.unstage(workspace, out[0].data);
  });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Kernel*>(kernel); }

// execute() may run on several threads at once: each kernel has its own stream and memories.
const rk_backend_api kBackend = {sizeof(rk_backend_api), "onednn", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy, &expected_ns};
const rk_backend_api* const kBackends[] = {&kBackend};
const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "onednn-backend", "0.1.0",
                            &rematkit::plugin::remember_host, 0, nullptr, 1, kBackends};

}  // namespace

namespace rematkit_onednn {

dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory::desc scratchpad_desc(const dnnl::primitive& primitive) {
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(primitive.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  return md ? dnnl::memory::desc(*md) : dnnl::memory::desc();
}

void execute(const dnnl::primitive& primitive, const dnnl::stream& stream, const std::vector<dnnl_exec_arg_t>& args) {
  dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream.get(), static_cast<int>(args.size()), args.data()),
                          "could not execute a primitive");
}

}  // namespace rematkit_onednn

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
