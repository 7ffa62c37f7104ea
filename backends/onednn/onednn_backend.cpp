// The oneDNN backend plugin (oneDNN 2.6, whose CPU runtime is OpenMP): conv_general_dilated and
// the window max and sum as convolutions and pooling (onednn_windows.cpp); dot_general through
// dnnl::matmul, 2-D and batched, whenever each operand's batch, free and contracted dims read as
// one strided dim each, in f32, bf16 and f16 (onednn_products.cpp); f32 elementwise primitives
// through dnnl::eltwise_forward and dnnl::binary (whose second source may broadcast; a broadcast
// first source of a commutative op is swapped there; onednn_elementwise.cpp); fused equations, a
// product with its bias and post-ops and a chain led by a binary op (onednn_fusions.cpp).
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

#include "onednn_elementwise.hpp"
#include "onednn_fusions.hpp"
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
using rematkit_onednn::count;
using rematkit_onednn::EltwiseOp;
using rematkit_onednn::kBinary;
using rematkit_onednn::kEltwise;
using rematkit_onednn::key_of;
using rematkit_onednn::row_major;
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


Dims shape_of(const rk_type& t) { return Dims(t.shape, t.shape + t.rank); }

bool all_f32_nonempty(const rk_equation_view* e) {
  for (size_t i = 0; i < e->num_inputs; ++i) {
    if (e->inputs[i].dtype != RK_DTYPE_F32) return false;
    for (int32_t d = 0; d < e->inputs[i].rank; ++d)
      if (e->inputs[i].shape[d] == 0) return false;
  }
  return e->num_outputs == 1 && e->outputs[0].dtype == RK_DTYPE_F32;
}

// How oneDNN runs `e`, or false when this backend does not.
bool recipe_for(const Backend& backend, const rk_equation_view* e, Recipe& r) {
  if (rematkit_onednn::fused_matmul_recipe(backend.engine, backend.products, e, r) ||
      rematkit_onednn::fused_binary_recipe(backend.engine, e, r) ||
      rematkit_onednn::transposed_product_recipe(backend.engine, e, backend.products, r))
    return true;
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
    const auto operands = rematkit_onednn::binary_operands(algorithm, shape_of(e->inputs[0]), shape_of(e->inputs[1]), out);
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
    const Dims out_dims = r.output.second.dims();
    const int64_t work = r.work > 0 ? r.work : count(out_dims);
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

int64_t count(const dnnl::memory::dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

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
