// The reference backend: the oracle the other backends are checked against. It runs the core's
// reference math (framework/reference_math, compiled into this plugin too): every value computed in
// double and stored rounded to its dtype, so it agrees bit for bit with the core's interpreter in
// f32 mode by construction.
#include <string>
#include <vector>

#include "rematkit/plugin/plugin.hpp"
#include "rematkit/reference_math/element_values.hpp"
#include "rematkit/reference_math/reference_kernels.hpp"

namespace {

using rematkit::Prim;
using rematkit::plugin::ArgumentError;
using rematkit::plugin::guarded;
namespace reference = rematkit::reference;

// The reference math's view of an equation's params.
struct ViewReader {
  const rk_equation_view* eqn;
  int64_t integer(const char* key) const { return rematkit::plugin::int_param(eqn, key); }
  int64_t integer_or(const char* key, int64_t otherwise) const {
    return rematkit::plugin::find_param(eqn, key) ? rematkit::plugin::int_param(eqn, key) : otherwise;
  }
  std::vector<int64_t> ints(const char* key) const { return rematkit::plugin::ints_param(eqn, key); }
  std::vector<int64_t> ints_or_none(const char* key) const { return rematkit::plugin::ints_param_or_none(eqn, key); }
  bool boolean(const char* key) const { return rematkit::plugin::bool_param(eqn, key); }
  std::vector<rematkit::PaddingDim> padding_config() const { return rematkit::plugin::padding_config(eqn); }
  rematkit::IndexingDims indexing_dims(rematkit::Prim) const { return rematkit::plugin::indexing_dims(eqn); }
  rematkit::IndexMode index_mode() const { return rematkit::plugin::index_mode(eqn); }
  std::optional<double> fill_value() const { return rematkit::plugin::fill_value(eqn); }
  rematkit::DotDims dot_dims() const { return rematkit::plugin::dot_dims(eqn); }
  bool rounds_to_nearest_even() const { return rematkit::plugin::rounds_to_nearest_even(eqn); }
  rematkit::ConvParams conv_params() const { return rematkit::plugin::conv_params(eqn); }
  rematkit::WindowParams window_params() const { return rematkit::plugin::window_params(eqn); }
  bool selects_max() const { return rematkit::plugin::selects_max(eqn); }
  rematkit::FftKind fft_kind() const { return rematkit::plugin::fft_kind(eqn); }
};

struct Operand {
  int32_t dtype;
  std::vector<int64_t> shape;
  size_t count() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
};

Operand operand_of(const rk_type& t) { return {t.dtype, std::vector<int64_t>(t.shape, t.shape + t.rank)}; }

// A prepared equation: the primitive, its decoded params and its operands' types.
struct Kernel {
  Prim prim;
  reference::KernelParams params;
  std::vector<Operand> inputs;
  Operand output;
};

std::optional<Prim> runnable(const rk_equation_view* e) {
  const std::optional<Prim> prim = rematkit::plugin::primitive_of(e);
  if (!prim || !reference::has_kernel(*prim) || e->num_outputs != 1) return std::nullopt;
  return prim;
}


// A buffer's elements as the reference math holds them: the values, or a complex buffer's real and
// imaginary parts.
struct Elements {
  std::vector<double> values, imag;
};

Elements load(const void* data, const Operand& o) {
  Elements e;
  e.values.resize(o.count());
  const bool complex = reference::is_complex_code(o.dtype);
  if (complex) e.imag.resize(o.count());
  for (size_t j = 0; j < e.values.size(); ++j) {
    e.values[j] = reference::load_element(data, o.dtype, j);
    if (complex) e.imag[j] = reference::load_complex_part(data, o.dtype, j, 1);
  }
  return e;
}

void run(const Kernel& k, const rk_tensor_view* in_views, const rk_tensor_view* out_view) {
  std::vector<Elements> values;
  values.reserve(k.inputs.size());
  std::vector<reference::Input> inputs;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    values.push_back(load(in_views[i].data, k.inputs[i]));
    inputs.push_back({values[i].values, k.inputs[i].shape, k.inputs[i].dtype, values[i].imag});
  }
  Elements result;
  result.values.resize(k.output.count());
  const bool complex = reference::is_complex_code(k.output.dtype);
  if (complex) result.imag.resize(k.output.count());
  reference::compute(k.prim, k.params, inputs, {result.values, k.output.shape, k.output.dtype, result.imag});
  for (size_t j = 0; j < result.values.size(); ++j) {
    reference::store_element(out_view->data, k.output.dtype, j, result.values[j]);
    if (complex) reference::store_complex_part(out_view->data, k.output.dtype, j, 1, result.imag[j]);
  }
}

rk_error* create(const rk_value*, size_t, rk_backend** out) {
  static int instance;
  *out = reinterpret_cast<rk_backend*>(&instance);  // stateless
  return nullptr;
}
void destroy(rk_backend*) {}
int32_t supports(const rk_backend*, const rk_equation_view* e) { return runnable(e) ? 1 : 0; }
rk_error* prepare(rk_backend*, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    const std::optional<Prim> prim = runnable(e);
    if (!prim) throw ArgumentError(std::string("unsupported primitive ") + e->primitive);
    auto k = new Kernel{*prim, reference::decode_params(*prim, ViewReader{e}), {}, operand_of(e->outputs[0])};
    for (size_t i = 0; i < e->num_inputs; ++i) k->inputs.push_back(operand_of(e->inputs[i]));
    *kernel = reinterpret_cast<rk_kernel*>(k);
    *workspace_bytes = 0;
  });
}
rk_error* execute(rk_kernel* kernel, const rk_tensor_view* inputs, size_t, const rk_tensor_view* outputs, size_t, void*,
                  size_t) {
  return guarded([&] { run(*reinterpret_cast<const Kernel*>(kernel), inputs, outputs); });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Kernel*>(kernel); }

const rk_backend_api kBackend = {sizeof(rk_backend_api), "reference", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy, nullptr};  // no estimates: the preference decides
const rk_backend_api* const kBackends[] = {&kBackend};
const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "reference-backend", "1.0.0",
                            &rematkit::plugin::remember_host, 0, nullptr, 1, kBackends};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
