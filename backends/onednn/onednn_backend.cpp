// The oneDNN backend plugin (oneDNN 2.6, whose CPU runtime is OpenMP): conv_general_dilated and
// the window max and sum as convolutions and pooling (onednn_windows.cpp); dot_general through
// dnnl::matmul, 2-D and batched, whenever each operand's batch, free and contracted dims read as
// one strided dim each, in f32, bf16 and f16 (onednn_products.cpp), a bias and post-ops fused in f32;
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
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "onednn_products.hpp"
#include "onednn_recipe.hpp"
#include "onednn_widening.hpp"
#include "rematkit/plugin/fusion_view.hpp"
#include "rematkit/plugin/measured_cost.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::Prim;
using rematkit::plugin::ArgumentError;
using rematkit::plugin::guarded;
using Dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;
using rematkit_onednn::key_of;
using rematkit_onednn::Recipe;  // a primitive to build for an equation (onednn_recipe.hpp)
using rematkit_onednn::user_scratchpad;

struct Backend {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // bf16_matmul=emulated: oneDNN's bf16 products also on AVX-512 cores without AVX512_BF16
  // (oneDNN converts in software: for checking that path on such a machine); bf16_matmul=widened:
  // widened to f32 even where the CPU multiplies bf16 (to measure and test that path there);
  // transposed_operands=strides|reordered: how every transposed operand is read, for measuring;
  // weights_layout=as_it_lies: no product's weights copied into oneDNN's preferred layout, likewise;
  // large_operands=matmul: no large product on oneDNN's sgemm (onednn_products.cpp), likewise;
  // widened_block_bytes=N: the block budget of widened bf16/f16 products (0: whole), so tests and
  // measurements can choose it.
  rematkit_onednn::ProductOptions products;
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
  std::vector<Recipe::Staged> staged;  // inputs read from the workspace, where stage() writes them (Recipe::stage)
  std::function<void(const rk_tensor_view*, std::byte*)> stage;
  size_t result_at = 0;  // the output, written in the workspace when there is an unstage (Recipe::unstage)
  std::function<void(std::byte*, void*)> unstage;
  Recipe::Run run;  // a product in blocks, in place of `primitive` (Recipe::make_run)
  size_t scratchpad_at = 0, scratchpad = 0;  // where oneDNN's scratchpad lies in the workspace, its bytes
};


dnnl::memory::desc row_major(const Dims& shape) {
  Dims dims = shape.empty() ? Dims{1} : shape;  // oneDNN has no rank-0 tensors
  Dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, dt::f32, strides);
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

// A fused product whose product runs on dnnl_sgemm (a large operand the matmul would repack as it
// goes, onednn_products.cpp): the product into the output, then its bias and post-ops as one oneDNN
// binary add in place on it: the matmul's arithmetic in its order (the f32 product, plus the bias,
// then each post-op), so the unfused sgemm product and the add and ops after it give the same bits.
class SgemmWithBias {
 public:
  SgemmWithBias(rematkit_onednn::SgemmCall gemm, size_t a_input, size_t b_input, const dnnl::binary::primitive_desc& pd,
                std::vector<std::pair<int, dnnl::memory::desc>> operands, const dnnl::engine& engine)
      : gemm_(std::move(gemm)), a_(a_input), b_(b_input), binary_(pd), stream_(engine) {
    for (const auto& [arg, desc] : operands) {  // per equation input; the product's two are unused
      memories_.emplace_back(desc, engine, nullptr);
      if (arg >= 0) args_.push_back({arg, memories_.back().get()});
    }
    product_ = dnnl::memory(pd.dst_desc(), engine, nullptr);
    args_.push_back({DNNL_ARG_SRC_0, product_.get()});
    args_.push_back({DNNL_ARG_DST, product_.get()});
    if (const dnnl::memory::desc scratchpad = pd.scratchpad_desc(); scratchpad.get_size()) {
      scratchpad_ = dnnl::memory(scratchpad, engine, nullptr);
      args_.push_back({DNNL_ARG_SCRATCHPAD, scratchpad_.get()});
    }
  }
  void run(const rk_tensor_view* inputs, std::byte* workspace, void* output) {
    gemm_(static_cast<const float*>(inputs[a_].data), static_cast<const float*>(inputs[b_].data), static_cast<float*>(output));
    for (size_t i = 0; i < memories_.size(); ++i) memories_[i].set_data_handle(inputs[i].data);
    product_.set_data_handle(output);
    if (scratchpad_) scratchpad_.set_data_handle(workspace);
    rematkit_onednn::execute(binary_, stream_, args_);
    stream_.wait();
  }

 private:
  rematkit_onednn::SgemmCall gemm_;
  size_t a_, b_;
  dnnl::binary binary_;
  dnnl::stream stream_;
  std::vector<dnnl::memory> memories_;
  dnnl::memory product_, scratchpad_;
  std::vector<dnnl_exec_arg_t> args_;
};

// Runs of an output's dims that every operand reads alike (each has the run's dims, or broadcasts
// along all of them) collapsed into one dim, at least two dims in all. Collapsed, a softmax's
// [B, H, S, 1] row max beside its [B, H, S, S] scores is [B*H*S, 1] beside [B*H*S, S], and a bias
// row [1, 1, D] beside [B, S, D] is [1, D] beside [B*S, D]: oneDNN 2.6 runs both with its JIT
// kernels, where as they were it runs its reference code.
class CollapsedDims {
 public:
  // Nothing where an operand neither has a dim of `out` nor broadcasts along it.
  static std::optional<CollapsedDims> of(const Dims& out, const std::vector<Dims>& operands) {
    CollapsedDims c;
    c.full_ = out;
    c.group_of_.assign(out.size(), -1);
    Dims runs;
    std::vector<char> last;  // per operand: whether it has the current run's dims
    for (size_t d = 0; d < out.size(); ++d) {
      if (out[d] == 1) continue;  // a size-1 dim reads alike either way
      std::vector<char> has;
      for (const Dims& o : operands) {
        const std::optional<Dims> s = as_rank(o, out.size());
        if (!s || ((*s)[d] != out[d] && (*s)[d] != 1)) return std::nullopt;
        has.push_back((*s)[d] == out[d] ? 1 : 0);
      }
      if (runs.empty() || has != last) runs.push_back(1);
      runs.back() *= out[d];
      c.group_of_[d] = static_cast<int>(runs.size()) - 1;
      last = std::move(has);
    }
    c.leading_ones_ = runs.size() < 2 ? 2 - runs.size() : 0;
    c.out_ = Dims(c.leading_ones_, 1);
    c.out_.insert(c.out_.end(), runs.begin(), runs.end());
    return c;
  }
  const Dims& out() const { return out_; }
  // An operand's dims collapsed the same way; nothing where it reads a run otherwise.
  std::optional<Dims> operand(const Dims& shape) const {
    const std::optional<Dims> padded = as_rank(shape, full_.size());
    if (!padded) return std::nullopt;
    const Dims& s = *padded;
    Dims dims(out_.size(), 1);
    std::vector<int> kind(out_.size(), -1);  // per run: 1 where it has the run's dims, 0 where it broadcasts
    for (size_t d = 0; d < full_.size(); ++d) {
      if (s[d] != full_[d] && s[d] != 1) return std::nullopt;
      if (group_of_[d] < 0) continue;
      const size_t g = static_cast<size_t>(group_of_[d]) + leading_ones_;
      const int k = s[d] == 1 ? 0 : 1;
      if (kind[g] >= 0 && kind[g] != k) return std::nullopt;
      kind[g] = k;
      dims[g] *= s[d];
    }
    return dims;
  }

 private:
  // A shape of lower rank with size-1 dims in front (a scalar: all 1), as broadcasting reads it.
  static std::optional<Dims> as_rank(const Dims& shape, size_t rank) {
    if (shape.size() > rank) return std::nullopt;
    Dims s(rank - shape.size(), 1);
    s.insert(s.end(), shape.begin(), shape.end());
    return s;
  }
  size_t leading_ones_ = 0;
  Dims full_, out_;  // the output's dims, and collapsed
  std::vector<int> group_of_;  // per dim of the output: its run, -1 for a size-1 dim
};

// A binary op's operands as oneDNN's binary takes them: the one of the output's shape first (a
// commutative op's two swap; `swapped`), the other broadcasting along size-1 dims (rank 0: all 1),
// with `also` (a fused chain's other operands) collapsed alike (CollapsedDims). Nothing where
// oneDNN's binary cannot read them.
struct BinaryOperands {
  Dims s0, s1;  // s0 is the output's dims too
  bool swapped = false;
};
std::optional<BinaryOperands> binary_operands(dnnl::algorithm algorithm, Dims s0, Dims s1, const Dims& out,
                                              std::vector<Dims> also = {}) {
  auto as_out_rank = [&](Dims shape) { return shape.empty() ? Dims(out.size(), 1) : shape; };
  s0 = as_out_rank(std::move(s0));
  s1 = as_out_rank(std::move(s1));
  bool swapped = false;
  if (s0 != out) {  // only the second source may broadcast
    const bool commutes = algorithm == dnnl::algorithm::binary_add || algorithm == dnnl::algorithm::binary_mul ||
                          algorithm == dnnl::algorithm::binary_max || algorithm == dnnl::algorithm::binary_min;
    if (!commutes || s1 != out) return std::nullopt;
    std::swap(s0, s1);
    swapped = true;
  }
  also.push_back(s1);
  std::optional<CollapsedDims> dims = CollapsedDims::of(out, also);
  if (!dims) return std::nullopt;
  const std::optional<Dims> c1 = dims->operand(s1);
  if (!c1) return std::nullopt;
  return BinaryOperands{dims->out(), *c1, swapped};
}

// A fused equation's inputs as oneDNN arguments: each input one argument, with its descriptor.
struct FusedArguments {
  explicit FusedArguments(size_t inputs) : arg_of(inputs, -1), desc_of(inputs) {}
  bool take(int64_t v, int arg, const dnnl::memory::desc& md) {
    if (v < 0 || v >= static_cast<int64_t>(arg_of.size()) || arg_of[static_cast<size_t>(v)] >= 0) return false;
    arg_of[static_cast<size_t>(v)] = arg;
    desc_of[static_cast<size_t>(v)] = md;
    return true;
  }
  bool all_taken() const { return std::all_of(arg_of.begin(), arg_of.end(), [](int a) { return a >= 0; }); }
  std::vector<int> arg_of;  // per equation input: its DNNL_ARG_*
  std::vector<dnnl::memory::desc> desc_of;
};

// The parts of `fusion` after its first as oneDNN post-ops on a result of `c_dims`: eltwise ops, and
// binary ops with an operand (an input of the output's shape, or one broadcast from [N] / [1, N])
// whose other operand is the part before; each part reading the one before, which nothing else
// reads. A first add of a row operand is the matmul's bias where `bias` is given. False where a
// part does not fit.
bool chain_post_ops(const rematkit::plugin::Fusion& fusion, const Dims& c_dims, FusedArguments& args, dnnl::post_ops& post,
                    dnnl::memory::desc* bias, std::string& key) {
  const std::vector<int64_t>& out_shape = fusion.parts().front().shape;
  const size_t inputs = fusion.num_inputs();
  for (size_t j = 1; j < fusion.parts().size(); ++j) {
    const rematkit::plugin::FusedPart& p = fusion.parts()[j];
    const int64_t previous = static_cast<int64_t>(inputs + j - 1);
    if (!p.prim || p.shape != out_shape || p.dtype != RK_DTYPE_F32 || fusion.readers(previous) != 1) return false;
    key += std::string(";") + p.primitive;
    const EltwiseOp* eltwise = nullptr;
    for (const EltwiseOp& op : kEltwise)
      if (op.primitive == *p.prim) eltwise = &op;
    if (eltwise && p.operands.size() == 1 && p.operands[0] == previous) {
      post.append_eltwise(1.0f, eltwise->algorithm, eltwise->alpha, eltwise->beta);
      continue;
    }
    if (p.operands.size() != 2) return false;
    const bool chain_first = p.operands[0] == previous;
    if (!chain_first && p.operands[1] != previous) return false;
    const int64_t other = chain_first ? p.operands[1] : p.operands[0];
    if (other >= static_cast<int64_t>(inputs) || fusion.dtype(other) != RK_DTYPE_F32) return false;
    const std::vector<int64_t>& os = fusion.shape(other);
    const int64_t n = c_dims.back();
    const bool row = count(os) == n && !os.empty() && os.back() == n;
    if (!row && os != out_shape) return false;
    Dims operand_dims = c_dims;
    if (row) std::fill(operand_dims.begin(), operand_dims.end() - 1, 1);
    const dnnl::memory::desc om = row_major(operand_dims);
    if (bias && *p.prim == Prim::kAdd && j == 1 && row) {
      *bias = om;
      if (!args.take(other, DNNL_ARG_BIAS, om)) return false;
      key += "-bias";
      continue;
    }
    const bool commutes = *p.prim == Prim::kAdd || *p.prim == Prim::kMul || *p.prim == Prim::kMax || *p.prim == Prim::kMin;
    if (!chain_first && !commutes) return false;  // oneDNN's binary post-op is chain op operand
    const dnnl::algorithm* algorithm = nullptr;
    for (const auto& [prim, alg] : kBinary)
      if (prim == *p.prim) algorithm = &alg;
    if (!algorithm || !args.take(other, DNNL_ARG_ATTR_MULTIPLE_POST_OP(post.len()) | DNNL_ARG_SRC_1, om)) return false;
    post.append_binary(*algorithm, om);
    key += row ? "-row" : "-full";
  }
  return args.all_taken();
}

// A fused product (rematkit/plugin/fusion_view.hpp) as one matmul: a first add of a [N] or [1, N]
// operand as its bias, then a chain of eltwise ops and binary ops with an operand as post-ops, each
// part reading the one before, the last part's value the only result. oneDNN adds the bias to the
// f32 accumulator and applies the post-ops to it before the one store.
bool fused_matmul_recipe(const Backend& backend, const rk_equation_view* e, Recipe& r) {
  const auto fusion = rematkit::plugin::Fusion::of(e);
  if (!fusion || fusion->parts().front().prim != Prim::kDotGeneral || fusion->results().size() != 1 ||
      fusion->results()[0] != static_cast<int64_t>(fusion->num_values()) - 1)
    return false;
  const auto part = fusion->part_equation(0);
  const rk_equation_view* product = part.get();
  rematkit_onednn::Layout a, b, c;
  if (!rematkit_onednn::matmul_layouts(product, a, b, c) || product->inputs[0].dtype != RK_DTYPE_F32 ||
      product->inputs[1].dtype != RK_DTYPE_F32 || product->outputs[0].dtype != RK_DTYPE_F32 ||
      e->outputs[0].dtype != RK_DTYPE_F32)
    return false;
  const dt in = dt::f32;
  const size_t inputs = fusion->num_inputs();
  FusedArguments args(inputs);
  const std::vector<int64_t>& ops = fusion->parts().front().operands;
  if (!args.take(ops[0], DNNL_ARG_SRC, dnnl::memory::desc(a.dims, in, a.strides)) ||
      !args.take(ops[1], DNNL_ARG_WEIGHTS, dnnl::memory::desc(b.dims, in, b.strides)))
    return false;
  const dnnl::memory::desc cm(c.dims, dt::f32, c.strides);
  dnnl::memory::desc bias;
  dnnl::post_ops post;
  std::string key = key_of("matmul-fused", {&a.dims, &a.strides, &b.dims, &b.strides});
  if (!chain_post_ops(*fusion, c.dims, args, post, &bias, key)) return false;
  std::vector<int>& arg_of = args.arg_of;
  std::vector<dnnl::memory::desc>& desc_of = args.desc_of;
  const dnnl::memory::desc am = desc_of[static_cast<size_t>(ops[0])];
  dnnl::memory::desc bm = desc_of[static_cast<size_t>(ops[1])];
  dnnl::primitive_attr with_post;
  with_post.set_post_ops(post);
  if (auto gemm = rematkit_onednn::large_product_on_sgemm(backend.engine, a, b, c, backend.products)) {
    // Without a bias no add carries the post-ops: declined, the parts run alone (the product on
    // sgemm), since the matmul here would give the product other bits than the unfused one's.
    if (!bias) return false;
    const dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, cm, bias, cm),
                                          user_scratchpad(with_post), backend.engine);
    std::vector<std::pair<int, dnnl::memory::desc>> operands;  // the product's two unused (-1)
    for (size_t i = 0; i < inputs; ++i) {
      const bool product_operand = static_cast<int64_t>(i) == ops[0] || static_cast<int64_t>(i) == ops[1];
      operands.emplace_back(product_operand ? -1 : arg_of[i] == DNNL_ARG_BIAS ? DNNL_ARG_SRC_1 : arg_of[i], desc_of[i]);
    }
    r = {key + "-sgemm", {}, {DNNL_ARG_DST, cm}, nullptr};
    r.workspace_bytes = pd.scratchpad_desc().get_size();
    r.work = count(c.dims) * a.dims.back();
    r.make_run = [gemm = *gemm, a_input = static_cast<size_t>(ops[0]), b_input = static_cast<size_t>(ops[1]), pd,
                  operands](const dnnl::engine& eng) -> Recipe::Run {
      auto run = std::make_shared<SgemmWithBias>(gemm, a_input, b_input, pd, operands, eng);
      return [run](const rk_tensor_view* in, std::byte* workspace, void* output) { run->run(in, workspace, output); };
    };
    return true;
  }
  const auto weights = rematkit_onednn::preferred_weights(backend.engine, am, bm, bias, cm, with_post, backend.products);
  if (weights) {
    desc_of[static_cast<size_t>(ops[1])] = *weights;
    key += "-weights-preferred";
  }
  r = {key, {}, {DNNL_ARG_DST, cm}, [am, bm = weights ? *weights : bm, bias, cm, post](const dnnl::engine& eng) -> dnnl::primitive {
         dnnl::primitive_attr attr;
         attr.set_post_ops(post);
         const dnnl::matmul::desc d = bias ? dnnl::matmul::desc(am, bm, bias, cm) : dnnl::matmul::desc(am, bm, cm);
         return dnnl::matmul(dnnl::matmul::primitive_desc(d, user_scratchpad(attr), eng));
       }};
  if (weights) rematkit_onednn::stage_weights(backend.engine, static_cast<int>(ops[1]), bm, *weights, r);
  for (size_t i = 0; i < inputs; ++i) r.inputs.emplace_back(arg_of[i], desc_of[i]);
  r.work = count(c.dims) * a.dims.back();
  return true;
}

// A fused chain led by a binary op (an input minus a row's max, then its exp) as one oneDNN binary
// with the parts after it as post-ops (chain_post_ops): one pass where the parts alone make one
// each. The binary's source with the output's shape is its first (a commutative op's two swap), the
// other broadcasts along size-1 dims, as the binary alone runs; the post-ops are oneDNN's eltwise
// and binary kernels themselves, so the parts' bits alone. Declined where oneDNN would run it with
// its reference code, as the binary alone is.
bool fused_binary_recipe(const Backend& backend, const rk_equation_view* e, Recipe& r) {
  const auto fusion = rematkit::plugin::Fusion::of(e);
  if (!fusion || fusion->parts().size() < 2 || fusion->results().size() != 1 ||
      fusion->results()[0] != static_cast<int64_t>(fusion->num_values()) - 1 || e->outputs[0].dtype != RK_DTYPE_F32)
    return false;
  const rematkit::plugin::FusedPart& first = fusion->parts().front();
  const dnnl::algorithm* algorithm = nullptr;
  for (const auto& [prim, alg] : kBinary)
    if (first.prim && prim == *first.prim) algorithm = &alg;
  const size_t inputs = fusion->num_inputs();
  if (!algorithm || first.operands.size() != 2 || first.dtype != RK_DTYPE_F32) return false;
  for (int64_t v : first.operands)
    if (v >= static_cast<int64_t>(inputs) || fusion->dtype(v) != RK_DTYPE_F32) return false;
  const Dims out = first.shape;
  if (out.empty() || count(out) == 0) return false;
  int64_t v0 = first.operands[0], v1 = first.operands[1];
  auto dims_of = [&](int64_t v) -> Dims { return fusion->shape(v); };
  std::vector<Dims> others;  // the post-ops' operands, collapsed alike
  for (size_t j = 1; j < fusion->parts().size(); ++j)
    for (int64_t v : fusion->parts()[j].operands)
      if (v != static_cast<int64_t>(inputs + j - 1) && v < static_cast<int64_t>(inputs)) others.push_back(dims_of(v));
  const auto operands = binary_operands(*algorithm, dims_of(v0), dims_of(v1), out, others);
  if (!operands) return false;
  if (operands->swapped) std::swap(v0, v1);
  const Dims& s0 = operands->s0;
  const Dims& s1 = operands->s1;
  const dnnl::memory::desc m0 = row_major(s0), m1 = row_major(s1), md = row_major(s0);
  FusedArguments args(inputs);
  dnnl::post_ops post;
  std::string key = key_of(std::string("binary-fused;") + first.primitive, {&s0, &s1});
  if (!args.take(v0, DNNL_ARG_SRC_0, m0) || !args.take(v1, DNNL_ARG_SRC_1, m1) ||
      !chain_post_ops(*fusion, s0, args, post, nullptr, key))
    return false;
  dnnl::primitive_attr attr;
  attr.set_post_ops(post);
  const dnnl::binary::desc d(*algorithm, m0, m1, md);
  try {
    const dnnl::binary::primitive_desc pd(d, user_scratchpad(attr), backend.engine);
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;
  } catch (const dnnl::error&) {  // post-ops this binary does not take
    return false;
  }
  r = {key, {}, {DNNL_ARG_DST, md}, [d, post](const dnnl::engine& eng) -> dnnl::primitive {
         dnnl::primitive_attr with_post;
         with_post.set_post_ops(post);
         return dnnl::binary(dnnl::binary::primitive_desc(d, user_scratchpad(with_post), eng));
       }};
  for (size_t i = 0; i < inputs; ++i) r.inputs.emplace_back(args.arg_of[i], args.desc_of[i]);
  return true;
}

// How oneDNN runs `e`, or false when this backend does not.
bool recipe_for(const Backend& backend, const rk_equation_view* e, Recipe& r) {
  if (fused_matmul_recipe(backend, e, r) || fused_binary_recipe(backend, e, r)) return true;
  if (rematkit_onednn::product_recipe(backend.engine, e, backend.products, r)) return true;
  const bool native_bf16 = rematkit_onednn::multiplies_bf16(backend.products.bf16);
  if (rematkit::plugin::primitive_of(e) == Prim::kConvGeneralDilated && native_bf16 && rematkit_onednn::has_half_and_f32_only(e)) {
    try {  // bf16 natively where oneDNN has a JIT kernel for it, else widened below
      if (rematkit_onednn::convolution_recipe(backend.engine, e, true, r)) return true;
    } catch (const dnnl::error&) {
    }
    r = Recipe{};
  }
  if (rematkit_onednn::convolution_recipe(backend.engine, e, false, r) || rematkit_onednn::pooling_recipe(backend.engine, e, r))
    return true;
  // A bf16 or f16 convolution as the f32 one on widened copies (XLA:CPU's f32 accumulation; oneDNN
  // 2.6 multiplies bf16 only with AVX-512).
  if (rematkit::plugin::primitive_of(e) == Prim::kConvGeneralDilated && rematkit_onednn::has_half_and_f32_only(e)) {
    const rematkit_onednn::F32Equation f32(e);
    if (!rematkit_onednn::convolution_recipe(backend.engine, f32.get(), false, r)) return false;
    rematkit_onednn::widen_recipe(e, r);
    return true;
  }
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
    const auto operands = binary_operands(algorithm, shape_of(e->inputs[0]), shape_of(e->inputs[1]), out);
    if (!operands) return false;
    const Dims& s0 = operands->s0;
    const Dims& s1 = operands->s1;
    const int arg0 = operands->swapped ? DNNL_ARG_SRC_1 : DNNL_ARG_SRC_0, arg1 = operands->swapped ? DNNL_ARG_SRC_0 : DNNL_ARG_SRC_1;
    const dnnl::memory::desc m0 = row_major(s0), m1 = row_major(s1), md = row_major(s0);
    // oneDNN 2.6 runs some broadcasts with its reference implementation (before the dims were
    // collapsed, a [B, H, S, 1] operand of a softmax's [B, H, S, S], far slower than Highway;
    // docs/performance.md has the figures): those are declined, for the next backend listed.
    const dnnl::binary::primitive_desc pd(dnnl::binary::desc(algorithm, m0, m1, md), user_scratchpad(), backend.engine);
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;
    // inputs[i] is the equation's operand i, whichever oneDNN source it feeds.
    r = {key_of(name, {&s0, &s1}), {{arg0, arg0 == DNNL_ARG_SRC_0 ? m0 : m1}, {arg1, arg1 == DNNL_ARG_SRC_0 ? m0 : m1}},
         {DNNL_ARG_DST, md}, [m0, m1, md, algorithm = algorithm](const dnnl::engine& eng) -> dnnl::primitive {
           return dnnl::binary(dnnl::binary::primitive_desc(dnnl::binary::desc(algorithm, m0, m1, md), user_scratchpad(), eng));
         }};
    return true;
  }
  return false;
}

// A string option's value: the choice named `value`, or nothing when it names none.
template <class Choice>
std::optional<Choice> choice_named(const char* value, std::initializer_list<std::pair<const char*, Choice>> choices) {
  for (const auto& [name, choice] : choices)
    if (std::string_view(value) == name) return choice;
  return std::nullopt;
}

rk_error* create(const rk_value* options, size_t n, rk_backend** out) {
  return guarded([&] {
    using rematkit_onednn::Bf16Products, rematkit_onednn::LargeOperands, rematkit_onednn::TransposedOperands,
        rematkit_onednn::WeightsLayout;
    auto backend = std::make_unique<Backend>();
    for (size_t i = 0; i < n; ++i) {
      const std::string name = options[i].name ? options[i].name : "";
      std::optional<Bf16Products> bf16;
      std::optional<TransposedOperands> transposed;
      std::optional<WeightsLayout> weights;
      std::optional<LargeOperands> large;
      if (name == "num_threads" && options[i].kind == RK_VALUE_INT && options[i].int_value >= 1) {
        backend->threads = static_cast<int>(options[i].int_value);
      } else if (name == "bf16_matmul" && options[i].kind == RK_VALUE_STRING &&
                 (bf16 = choice_named<Bf16Products>(options[i].string_value, {{"native", Bf16Products::kNative},
                                                                               {"emulated", Bf16Products::kEmulated},
                                                                               {"widened", Bf16Products::kWidened}}))) {
        backend->products.bf16 = *bf16;
      } else if (name == "transposed_operands" && options[i].kind == RK_VALUE_STRING &&
                 (transposed = choice_named<TransposedOperands>(options[i].string_value,
                                                                {{"chosen", TransposedOperands::kChosen},
                                                                 {"strides", TransposedOperands::kStrides},
                                                                 {"reordered", TransposedOperands::kReordered}}))) {
        backend->products.transposed = *transposed;
      } else if (name == "weights_layout" && options[i].kind == RK_VALUE_STRING &&
                 (weights = choice_named<WeightsLayout>(options[i].string_value, {{"preferred", WeightsLayout::kPreferred},
                                                                                  {"as_it_lies", WeightsLayout::kAsItLies}}))) {
        backend->products.weights = *weights;
      } else if (name == "large_operands" && options[i].kind == RK_VALUE_STRING &&
                 (large = choice_named<LargeOperands>(options[i].string_value, {{"sgemm", LargeOperands::kSgemm},
                                                                                {"matmul", LargeOperands::kMatmul}}))) {
        backend->products.large_operands = *large;
      } else if (name == "widened_block_bytes" && options[i].kind == RK_VALUE_INT && options[i].int_value >= 0) {
        backend->products.widened_block_bytes = static_cast<size_t>(options[i].int_value);
      } else {
        throw ArgumentError("the onednn backend takes num_threads=N (N >= 1), bf16_matmul='native', 'emulated' or 'widened', "
                            "transposed_operands='chosen', 'strides' or 'reordered', weights_layout='preferred' or "
                            "'as_it_lies', large_operands='sgemm' or 'matmul' and widened_block_bytes=N (N >= 0)");
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

// One call's time on one thread, from rematkit_kernels_bench's elementwise/onednn and gemm rows (the
// sittings are in docs/performance.md): a call's fixed cost comes before any work, so Highway takes
// the small elementwise ones; products as onednn_products.cpp estimates them (convolutions and
// pooling: no estimate, they stay here).
double expected_ns(const rk_backend* handle, const rk_equation_view* e) {
  try {
    const std::optional<Prim> prim = rematkit::plugin::primitive_of(e);
    if (prim == Prim::kDotGeneral)
      return rematkit_onednn::product_expected_ns(e, reinterpret_cast<const Backend*>(handle)->products);
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
    k->result_at = r.result_at;
    k->unstage = r.unstage;
    if (r.make_run) {  // its own primitives, their scratchpads in r.workspace_bytes
      k->run = r.make_run(backend.engine);
      *workspace_bytes = r.workspace_bytes;
      *kernel = reinterpret_cast<rk_kernel*>(k.release());
      return;
    }
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
    if (k.run) return k.run(in, static_cast<std::byte*>(workspace), out[0].data);
    for (size_t i = 0; i < k.inputs.size(); ++i) k.memories[i].set_data_handle(in[i].data);
    std::byte* const ws = static_cast<std::byte*>(workspace);
    if (k.stage) k.stage(in, ws);
    for (const Recipe::Staged& s : k.staged) k.memories[static_cast<size_t>(s.input)].set_data_handle(ws + s.at);
    k.memories[k.inputs.size()].set_data_handle(k.unstage ? ws + k.result_at : out[0].data);
    if (k.scratchpad) k.memories.back().set_data_handle(ws + k.scratchpad_at);
    rematkit_onednn::execute(k.primitive, k.stream, k.args);
    k.stream.wait();
    if (k.unstage) k.unstage(ws, out[0].data);
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
