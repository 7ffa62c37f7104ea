// dot_general through dnnl::matmul, 2-D and batched, whenever each operand's batch, free and
// contracted dims read as one strided dim each (transposed operands and [B, S, D] activations
// included). bf16 runs natively where the CPU multiplies bf16 (AVX512_BF16, AMX); elsewhere bf16
// and f16 operands are widened into f32 copies in the kernel's workspace and the f32 matmul runs on
// them, its result rounded back to bf16 or f16 unless the product asks for f32: XLA:CPU's
// semantics (f32 accumulation, one rounding on store), where oneDNN 2.6 has no bf16 kernel; a large
// one in cache-sized blocks (onednn_blocked_products.cpp).
#include "onednn_products.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../strided_product.hpp"
#include "onednn_blocked_products.hpp"
#include "onednn_widening.hpp"
#include "rematkit/plugin/fusion_view.hpp"
#include "rematkit/plugin/measured_cost.hpp"

namespace rematkit_onednn {
namespace {

using Dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

Dims row_major_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

// A group of an operand's dims read as one dim: their total size and the stride that steps through
// them, when the dims (in the group's order) lie in memory as one does; size-1 dims fit anywhere.
bool collapse(const Dims& shape, const Dims& st, const Dims& group, int64_t& size, int64_t& stride) {
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
bool collapse(const Dims& shape, const Dims& group, int64_t& size, int64_t& stride) {
  return collapse(shape, row_major_strides(shape), group, size, stride);
}

// The dims of `shape` in none of the lists, in order: an operand's free dims.
Dims free_dims(const Dims& shape, const Dims& contract, const Dims& batch) {
  Dims out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (std::find(contract.begin(), contract.end(), d) == contract.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      out.push_back(d);
  return out;
}

// What the matmul multiplies: f32 operands; bf16 ones natively; or bf16/f16 ones widened to f32.
enum class Operands { kF32, kNativeBf16, kWidened };

// Operands of one dtype, and a result of theirs or f32 (preferred_element_type=float32).
std::optional<Operands> operands_of(const rk_equation_view* e, const ProductOptions& options) {
  const int32_t in = e->inputs[0].dtype, out = e->outputs[0].dtype;
  if (e->inputs[1].dtype != in || (out != in && out != RK_DTYPE_F32)) return std::nullopt;
  switch (in) {
    case RK_DTYPE_F32: return Operands::kF32;
    case RK_DTYPE_BF16: return multiplies_bf16(options.bf16) ? Operands::kNativeBf16 : Operands::kWidened;
    case RK_DTYPE_F16: return Operands::kWidened;
    default: return std::nullopt;
  }
}

std::string matmul_impl(const dnnl::engine& engine, const Layout& a, const Layout& b, const Layout& c) {
  auto desc = [](const Layout& l) { return dnnl::memory::desc(l.dims, dt::f32, l.strides); };
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(desc(a), desc(b), desc(c)), user_scratchpad(), engine);
  return pd.impl_info_str();
}

// Whether a transposed operand (`which`: 0 for a, 1 for b) is copied into the plain layout before
// the product: when oneDNN would run the product on another implementation with it as it lies than
// with it plain, so the strides cost the fast kernel. Where the implementation is the same (oneDNN
// 2.6's gemm:jit on AVX2 takes every layout and packs both operands itself), the copy is a pass
// more: measured on this AVX2 machine, reading by strides was as fast or faster for each of the 16
// transposed products of a 768-wide gpt (docs/performance.md, "Products at their best").
bool reorders(const dnnl::engine& engine, const Layout& a, const Layout& b, const Layout& c, int which,
              const ProductOptions& options) {
  const Layout& l = which == 0 ? a : b;
  if (!transposed(l)) return false;
  switch (options.transposed) {
    case TransposedOperands::kStrides: return false;
    case TransposedOperands::kReordered: return true;
    case TransposedOperands::kChosen: break;
  }
  Layout plain = l;
  plain.strides = row_major_strides(l.dims);
  return matmul_impl(engine, a, b, c) != (which == 0 ? matmul_impl(engine, plain, b, c) : matmul_impl(engine, a, plain, c));
}

// Bytes of the workspace handed out in order, each part on cache lines of its own.
struct WorkspacePlan {
  size_t bytes = 0;
  size_t place(size_t part) {
    const size_t at = bytes;
    bytes = cache_lines(bytes + part);
    return at;
  }
};

// A transposed operand copied into the plain layout before each run (oneDNN's reorder).
struct OperandStaging {
  int input = 0;
  std::shared_ptr<Reordering> reordering;
  size_t plain_at = 0, reorder_scratch_at = 0;
  void run(const rk_tensor_view* inputs, std::byte* workspace) const {
    reordering->run(inputs[input].data, workspace + plain_at, workspace + reorder_scratch_at);
  }
};

// Plans the reordering of operand `input` (laid out as `l`, which becomes the plain layout) when
// `reorder`, and returns the descriptor the matmul reads it by.
dnnl::memory::desc stage_operand(const dnnl::engine& engine, int input, Layout& l, bool reorder, WorkspacePlan& ws,
                                 std::vector<OperandStaging>& staging) {
  const dnnl::memory::desc as_it_lies(l.dims, dt::f32, l.strides);
  if (!reorder) return as_it_lies;
  l.strides = row_major_strides(l.dims);
  const dnnl::memory::desc plain(l.dims, dt::f32, l.strides);
  OperandStaging s;
  s.input = input;
  s.reordering = std::make_shared<Reordering>(engine, as_it_lies, plain);
  s.plain_at = ws.place(plain.get_size());
  s.reorder_scratch_at = ws.place(s.reordering->scratchpad_bytes());
  staging.push_back(s);
  return plain;
}

// A 2-D product's weights copied into the layout oneDNN prefers from this many rows (M) and up to
// this many bytes (a copy that size sits in the step's memory plan). On AVX-512, oneDNN 2.6's
// brgemm matmul reads plain weights up to 3x slower than its blocked ones (a [768, 3072] weight: 61
// against 187 GFLOP/s), and the copy costs about what K x N multiply-adds do: from 768 rows it paid
// in every product measured, at 512 it cost what it saved; attention's batched products gained
// nothing (docs/performance.md, "Weights in oneDNN's layout"). Where the CPU runs oneDNN's gemm
// (AVX2), the preferred layout is the plain one: no copy.
constexpr int64_t kPreferredWeightsRows = 768;
constexpr size_t kPreferredWeightsBytes = size_t{32} << 20;

// A large f32 product on oneDNN's sgemm (gemm:jit, called as dnnl_sgemm) rather than its matmul:
// where the matmul would run brgemm (AVX-512) and read an operand over kPreferredWeightsBytes in a
// layout not its blocked one, which it repacks as it goes: weights too large to copy into that
// layout, plain or transposed, or a transposed lhs (a vocabulary's products). sgemm packs both
// operands in cache-sized panels itself, in buffers of its own, outside the step's memory plan, as
// oneDNN's matmul does on AVX2, where it runs this same gemm (docs/performance.md, "Large products
// on oneDNN's sgemm", has the timings).
struct Sgemm {
  char transa = 'N', transb = 'N';
  dnnl_dim_t m = 0, n = 0, k = 0, lda = 0, ldb = 0;
};

// A 2-D operand as dnnl_sgemm reads it ('N' or 'T' and its leading dim); false where it cannot.
bool blas_operand(const Layout& l, char& trans, dnnl_dim_t& ld) {
  const auto m = rematkit::backends::blas_matrix({l.dims[0], l.strides[0]}, {l.dims[1], l.strides[1]});
  if (!m) return false;
  trans = m->transposed ? 'T' : 'N';
  ld = m->leading;
  return true;
}

std::optional<Sgemm> sgemm_for(const dnnl::engine& engine, const Layout& a, const Layout& b, const Layout& c,
                               const ProductOptions& options) {
  if (options.large_operands != LargeOperands::kSgemm || a.dims.size() != 2) return std::nullopt;
  auto bytes = [](const Layout& l) { return static_cast<size_t>(count(l.dims)) * sizeof(float); };
  const bool large_weights = bytes(b) > kPreferredWeightsBytes;
  const bool large_transposed_lhs = transposed(a) && bytes(a) > kPreferredWeightsBytes;
  if (!large_weights && !large_transposed_lhs) return std::nullopt;
  Sgemm g;
  if (!blas_operand(a, g.transa, g.lda) || !blas_operand(b, g.transb, g.ldb)) return std::nullopt;
  if (matmul_impl(engine, a, b, c).rfind("brg", 0) != 0) return std::nullopt;  // gemm:jit already (AVX2)
  g.m = a.dims[0];
  g.k = a.dims[1];
  g.n = b.dims[1];
  return g;
}

void run_sgemm(const Sgemm& g, const float* a, const float* b, float* c) {
  // beta 0: C is written, never read (the host's buffer is not cleared)
  dnnl::error::wrap_c_api(dnnl_sgemm(g.transa, g.transb, g.m, g.n, g.k, 1.0f, a, g.lda, b, g.ldb, 0.0f, c, g.n),
                          "could not run dnnl_sgemm");
}

void sgemm_recipe(const Sgemm& g, Recipe& r) {
  r.work = g.m * g.n * g.k;
  r.make_run = [g](const dnnl::engine&) -> Recipe::Run {
    return [g](const rk_tensor_view* inputs, std::byte*, void* output) {
      run_sgemm(g, static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
                static_cast<float*>(output));
    };
  };
}

}  // namespace

std::optional<dnnl::memory::desc> preferred_weights(const dnnl::engine& engine, const dnnl::memory::desc& am,
                                                    const dnnl::memory::desc& bm, const dnnl::memory::desc& bias,
                                                    const dnnl::memory::desc& cm, const dnnl::primitive_attr& attr,
                                                    const ProductOptions& options) {
  const Dims dims = am.dims();
  if (options.weights == WeightsLayout::kAsItLies || dims.size() != 2 || dims[0] < kPreferredWeightsRows ||
      bm.get_size() > kPreferredWeightsBytes)
    return std::nullopt;
  const dnnl::memory::desc any(bm.dims(), bm.data_type(), dnnl::memory::format_tag::any);
  dnnl::primitive_attr with_scratchpad = attr;
  with_scratchpad.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::desc d = bias ? dnnl::matmul::desc(am, any, bias, cm) : dnnl::matmul::desc(am, any, cm);
  const dnnl::memory::desc preferred = dnnl::matmul::primitive_desc(d, with_scratchpad, engine).weights_desc();
  if (preferred == bm) return std::nullopt;
  return preferred;
}

void stage_weights(const dnnl::engine& engine, int input, const dnnl::memory::desc& lies,
                   const dnnl::memory::desc& preferred, Recipe& r) {
  WorkspacePlan ws{r.workspace_bytes};
  auto reordering = std::make_shared<Reordering>(engine, lies, preferred);
  const size_t at = ws.place(preferred.get_size()), scratch_at = ws.place(reordering->scratchpad_bytes());
  r.workspace_bytes = ws.bytes;
  r.staged.push_back({input, at});
  auto inner = r.stage;
  r.stage = [inner, reordering, input, at, scratch_at](const rk_tensor_view* inputs, std::byte* workspace) {
    if (inner) inner(inputs, workspace);
    reordering->run(inputs[input].data, workspace + at, workspace + scratch_at);
  };
}

std::optional<SgemmCall> large_product_on_sgemm(const dnnl::engine& engine, const Layout& a, const Layout& b,
                                                const Layout& c, const ProductOptions& options) {
  const std::optional<Sgemm> g = sgemm_for(engine, a, b, c, options);
  if (!g) return std::nullopt;
  return SgemmCall([g = *g](const float* x, const float* y, float* z) { run_sgemm(g, x, y, z); });
}

bool matmul_layouts(const rk_equation_view* e, Layout& a, Layout& b, Layout& c, bool batch_dims_apart) {
  if (rematkit::plugin::primitive_of(e) != rematkit::Prim::kDotGeneral || e->num_inputs != 2 || e->num_outputs != 1)
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
  if (!batch_dims_apart && collapse(ls, lb, batch_l, stride_l) && collapse(rs, rb, batch_r, stride_r)) {
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

bool multiplies_bf16(Bf16Products how) {
  auto has = [](dnnl::cpu_isa wanted) {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa()), w = static_cast<unsigned>(wanted);
    return (isa & w) == w;
  };
  static const bool native = has(dnnl::cpu_isa::avx512_core_bf16), avx512 = has(dnnl::cpu_isa::avx512_core);
  switch (how) {
    case Bf16Products::kNative: return native;
    case Bf16Products::kEmulated: return native || avx512;
    case Bf16Products::kWidened: return false;
  }
  return false;
}

namespace {

// `widened_copies`: the f32 product on a bf16 or f16 one's widened copies (its staging wraps a
// primitive, so no sgemm run).
bool product_recipe_of(const dnnl::engine& engine, const rk_equation_view* e, const ProductOptions& options, Recipe& r,
                       bool widened_copies) {
  Layout a, b, c;
  if (!matmul_layouts(e, a, b, c)) return false;
  const std::optional<Operands> operands = operands_of(e, options);
  if (!operands) return false;
  if (*operands == Operands::kWidened) {  // the f32 product on widened copies (onednn_widening.hpp)
    if (blocked_product_recipe(engine, e, a, b, c, options.widened_block_bytes, r)) return true;  // large: in blocks
    const F32Equation f32(e);
    if (!product_recipe_of(engine, f32.get(), options, r, true)) return false;
    widen_recipe(e, r);
    return true;
  }
  if (*operands == Operands::kF32 && !widened_copies)
    if (const std::optional<Sgemm> g = sgemm_for(engine, a, b, c, options)) {
      sgemm_recipe(*g, r);
      return true;
    }
  const int32_t out = e->outputs[0].dtype;
  std::string key = "matmul";
  dnnl::memory::desc am, bm, cm;
  std::optional<dnnl::memory::desc> weights;  // b in oneDNN's preferred layout, copied there per run
  if (*operands == Operands::kNativeBf16) {  // oneDNN's bf16 matmul sums in f32 and rounds once
    am = dnnl::memory::desc(a.dims, dt::bf16, a.strides);
    bm = dnnl::memory::desc(b.dims, dt::bf16, b.strides);
    cm = dnnl::memory::desc(c.dims, out == RK_DTYPE_BF16 ? dt::bf16 : dt::f32, c.strides);
    key += out == RK_DTYPE_BF16 ? "-bf16" : "-bf16f32";
    weights = preferred_weights(engine, am, bm, {}, cm, {}, options);
  } else {
    WorkspacePlan ws;
    std::vector<OperandStaging> staging;
    am = stage_operand(engine, 0, a, reorders(engine, a, b, c, 0, options), ws, staging);
    bm = dnnl::memory::desc(b.dims, dt::f32, b.strides);
    cm = dnnl::memory::desc(c.dims, dt::f32, c.strides);
    weights = preferred_weights(engine, am, bm, {}, cm, {}, options);
    if (!weights) bm = stage_operand(engine, 1, b, reorders(engine, a, b, c, 1, options), ws, staging);
    for (const OperandStaging& s : staging) r.staged.push_back({s.input, s.plain_at});
    if (!staging.empty())
      r.stage = [staging](const rk_tensor_view* inputs, std::byte* workspace) {
        for (const OperandStaging& s : staging) s.run(inputs, workspace);
      };
    r.workspace_bytes = ws.bytes;
  }
  if (weights) {
    stage_weights(engine, 1, bm, *weights, r);
    bm = *weights;
    key += "-weights-preferred";
  }
  const dnnl::matmul::desc d(am, bm, cm);
  if (a.dims.size() > 3) {  // several batch dims: declined where oneDNN would run its reference code
    const dnnl::matmul::primitive_desc pd(d, user_scratchpad(), engine);
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;
  }
  // The primitive depends on the descriptors alone: a widened product shares an f32 one's.
  r.key = key_of(key, {&a.dims, &a.strides, &b.dims, &b.strides});
  r.inputs = {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}};
  r.output = {DNNL_ARG_DST, cm};
  r.make = [d](const dnnl::engine& eng) -> dnnl::primitive {
    // The oneDNN 2.x API: an operation descriptor, then its primitive descriptor.
    return dnnl::matmul(dnnl::matmul::primitive_desc(d, user_scratchpad(), eng));
  };
  r.work = count(c.dims) * a.dims.back();
  return true;
}

}  // namespace

bool product_recipe(const dnnl::engine& engine, const rk_equation_view* e, const ProductOptions& options, Recipe& r) {
  return product_recipe_of(engine, e, options, r, false);
}

bool transposed_product_recipe(const dnnl::engine& engine, const rk_equation_view* e, const ProductOptions& options,
                               Recipe& r) {
  const auto fusion = rematkit::plugin::Fusion::of(e);
  if (!fusion || fusion->parts().size() != 2 || fusion->num_inputs() != 2 ||
      fusion->parts()[0].prim != rematkit::Prim::kDotGeneral || fusion->parts()[1].prim != rematkit::Prim::kTranspose ||
      fusion->parts()[1].operands != std::vector<int64_t>{2} || fusion->results() != std::vector<int64_t>{3})
    return false;
  const std::vector<int64_t>& ops = fusion->parts()[0].operands;
  const auto part = fusion->part_equation(0);
  const rk_equation_view* product = part.get();
  if (ops.size() != 2 || ops[0] == ops[1] || product->outputs[0].dtype != RK_DTYPE_F32) return false;
  // As the product alone runs it: one matmul on its operands as they lie, else declined.
  Layout a, b, c;
  if (!matmul_layouts(product, a, b, c) || operands_of(product, options) != Operands::kF32 ||
      sgemm_for(engine, a, b, c, options) || reorders(engine, a, b, c, 0, options) || reorders(engine, a, b, c, 1, options))
    return false;
  const dnnl::memory::desc plain_c(c.dims, dt::f32, c.strides);
  if (preferred_weights(engine, dnnl::memory::desc(a.dims, dt::f32, a.strides), dnnl::memory::desc(b.dims, dt::f32, b.strides),
                        {}, plain_c, {}, options))
    return false;
  // The product's dims (batch, lhs free, rhs free) by their strides in the transposed result.
  Layout ta, tb, tc;
  if (!matmul_layouts(product, ta, tb, tc, true)) return false;
  const Dims out = fusion->parts()[0].shape;
  const std::vector<int64_t> perm = rematkit::plugin::ints_param(fusion->part_equation(1).get(), "permutation");
  if (perm.size() != out.size()) return false;
  Dims transposed_shape(out.size()), at_strides(out.size());
  for (size_t j = 0; j < perm.size(); ++j) transposed_shape[j] = out[static_cast<size_t>(perm[j])];
  const Dims transposed_strides = row_major_strides(transposed_shape);
  for (size_t j = 0; j < perm.size(); ++j) at_strides[static_cast<size_t>(perm[j])] = transposed_strides[j];
  const size_t batch = tc.dims.size() - 2;
  const size_t lhs_free = static_cast<size_t>(product->inputs[0].rank) - batch -
                          rematkit::plugin::dot_dims(product).lhs_contract.size();
  auto group = [&](size_t from, size_t to) {
    Dims g;
    for (size_t d = from; d < to; ++d) g.push_back(static_cast<int64_t>(d));
    return g;
  };
  int64_t m, n, sm, sn;
  if (!collapse(out, at_strides, group(batch, batch + lhs_free), m, sm) ||
      !collapse(out, at_strides, group(batch + lhs_free, out.size()), n, sn) || m != tc.dims[batch] || n != tc.dims[batch + 1])
    return false;
  for (size_t d = 0; d < batch; ++d) tc.strides[d] = at_strides[d];
  tc.strides[batch] = sm;
  tc.strides[batch + 1] = sn;
  // The same kernel as the product alone, so the same sums in the same order: only where it stores
  // them differs.
  const std::string impl = matmul_impl(engine, ta, tb, tc);
  if (impl != matmul_impl(engine, a, b, c) || impl.rfind("ref", 0) == 0) return false;
  const dnnl::memory::desc am(ta.dims, dt::f32, ta.strides), bm(tb.dims, dt::f32, tb.strides), cm(tc.dims, dt::f32, tc.strides);
  r.key = key_of("matmul-transposed-result", {&ta.dims, &ta.strides, &tb.dims, &tb.strides, &tc.strides});
  r.inputs.assign(2, {});
  r.inputs[static_cast<size_t>(ops[0])] = {DNNL_ARG_SRC, am};
  r.inputs[static_cast<size_t>(ops[1])] = {DNNL_ARG_WEIGHTS, bm};
  r.output = {DNNL_ARG_DST, cm};
  const dnnl::matmul::desc d(am, bm, cm);
  r.make = [d](const dnnl::engine& eng) -> dnnl::primitive {
    return dnnl::matmul(dnnl::matmul::primitive_desc(d, user_scratchpad(), eng));
  };
  r.work = count(tc.dims) * ta.dims.back();
  return true;
}

// An f32 product's time on one thread by its multiply-adds, whatever its layout (transposed
// operands measured as fast as plain ones), and what widening a bf16 or f16 element and rounding a
// result's element back add: rematkit_kernels_bench's gemm/onednn rows (row_1x64x64, 64^3 to
// 1024^3, gpt768_t1024_*_768x3072) and their gemm_bf16 twins, CPU-time medians on this AVX2 machine
// (docs/performance.md, "Products at their best"). A native bf16 product is estimated as an f32 one.
// One widened in blocks (onednn_blocked_products.cpp) converts as many elements at the same rate:
// timed alone, one product, its blocks cost what the whole copies do; the blocks' gain shows in a
// step's time.
double product_expected_ns(const rk_equation_view* e, const ProductOptions& options) {
  Layout a, b, c;
  if (!matmul_layouts(e, a, b, c)) return -1;
  const std::optional<Operands> operands = operands_of(e, options);
  if (!operands) return -1;
  const double products = static_cast<double>(count(c.dims)) * static_cast<double>(a.dims.back());
  double ns = rematkit::plugin::measured_ns({{4096, 774}, {262144, 6450}, {2097152, 46000}, {16777216, 368000},
                                             {134217728, 4207000}, {1073741824, 25361000}, {2415919104, 55366000}},
                                            products);
  if (*operands == Operands::kWidened) {
    constexpr double kConvertNs = 0.3;  // per element widened or rounded back
    double converted = static_cast<double>(count(a.dims) + count(b.dims));
    if (e->outputs[0].dtype != RK_DTYPE_F32) converted += static_cast<double>(count(c.dims));
    ns += kConvertNs * converted;
  }
  return ns;
}

}  // namespace rematkit_onednn
