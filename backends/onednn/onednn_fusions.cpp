#include "onednn_fusions.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onednn_elementwise.hpp"
#include "rematkit/plugin/fusion_view.hpp"

namespace rematkit_onednn {
namespace {

using dt = dnnl::memory::data_type;

// A fused product whose product runs on dnnl_sgemm (a large operand the matmul would repack as it
// goes, onednn_products.cpp): the product into the output, then its bias and post-ops as one oneDNN
// binary add in place on it: the matmul's arithmetic in its order (the f32 product, plus the bias,
// then each post-op), so the unfused sgemm product and the add and ops after it give the same bits.
class SgemmWithBias {
 public:
  SgemmWithBias(SgemmCall gemm, size_t a_input, size_t b_input, const dnnl::binary::primitive_desc& pd,
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
    execute(binary_, stream_, args_);
    stream_.wait();
  }

 private:
  SgemmCall gemm_;
  size_t a_, b_;
  dnnl::binary binary_;
  dnnl::stream stream_;
  std::vector<dnnl::memory> memories_;
  dnnl::memory product_, scratchpad_;
  std::vector<dnnl_exec_arg_t> args_;
};

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

}  // namespace

// A fused product (rematkit/plugin/fusion_view.hpp) as one matmul: a first add of a [N] or [1, N]
// operand as its bias, then a chain of eltwise ops and binary ops with an operand as post-ops, each
// part reading the one before, the last part's value the only result. oneDNN adds the bias to the
// f32 accumulator and applies the post-ops to it before the one store.
bool fused_matmul_recipe(const dnnl::engine& engine, const ProductOptions& products, const rk_equation_view* e, Recipe& r) {
  const auto fusion = rematkit::plugin::Fusion::of(e);
  if (!fusion || fusion->parts().front().prim != Prim::kDotGeneral || fusion->results().size() != 1 ||
      fusion->results()[0] != static_cast<int64_t>(fusion->num_values()) - 1)
    return false;
  const auto part = fusion->part_equation(0);
  const rk_equation_view* product = part.get();
  Layout a, b, c;
  if (!matmul_layouts(product, a, b, c) || product->inputs[0].dtype != RK_DTYPE_F32 ||
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
  if (auto gemm = large_product_on_sgemm(engine, a, b, c, products)) {
    // Without a bias no add carries the post-ops: declined, the parts run alone (the product on
    // sgemm), since the matmul here would give the product other bits than the unfused one's.
    if (!bias) return false;
    const dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, cm, bias, cm),
                                          user_scratchpad(with_post), engine);
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
  const auto weights = preferred_weights(engine, am, bm, bias, cm, with_post, products);
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
  if (weights) stage_weights(engine, static_cast<int>(ops[1]), bm, *weights, r);
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
bool fused_binary_recipe(const dnnl::engine& engine, const rk_equation_view* e, Recipe& r) {
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
    const dnnl::binary::primitive_desc pd(d, user_scratchpad(attr), engine);
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

}  // namespace rematkit_onednn
