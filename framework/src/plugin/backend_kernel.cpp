#include "rematkit/plugin_host/backend_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <variant>

#include "equation_view.hpp"
#include "host_api.hpp"
#include "rematkit/plugin_host/buffer_alignment.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/ir/near_names.hpp"
#include "rematkit/plugin/rk_backend.h"

namespace rematkit {
namespace {

Type device(Type t) {
  t.space = MemorySpace::kDevice;
  return t;
}

std::string where_of(const FlatEquation& eqn) {
  return std::string(prim_name(eqn.prim)) + " at " + (eqn.where.file.empty() ? "<program>" : eqn.where.file) + ":" +
         std::to_string(eqn.where.line);
}

// One mutex per backend that is not thread-safe, for every instance of it in the process.
std::mutex& serializing_mutex(const rk_backend_api* api) {
  static std::mutex guard;
  static std::map<const rk_backend_api*, std::unique_ptr<std::mutex>> mutexes;
  std::lock_guard<std::mutex> lock(guard);
  std::unique_ptr<std::mutex>& m = mutexes[api];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

// The ABI minor that brought a dtype's rk_dtype code (rk_plugin.h): f32, i32 and bool 1.0, the
// others to key<fry> 1.3, c64 and c128 1.8.
int minor_introducing(DType dtype) {
  if (is_complex(dtype)) return 8;
  return dtype == DType::kF32 || dtype == DType::kI32 || dtype == DType::kBool ? 0 : 3;
}

// Whether a plugin of `abi_minor` knows every dtype of an equation's operands and results.
bool knows_dtypes(int abi_minor, const std::vector<Type>& inputs, const std::vector<Type>& outputs) {
  for (const std::vector<Type>* types : {&inputs, &outputs})
    for (const Type& t : *types)
      if (minor_introducing(t.dtype) > abi_minor) return false;
  return true;
}

}  // namespace

PreparedKernel::~PreparedKernel() {
  if (api_ && api_->kernel_destroy && kernel_) api_->kernel_destroy(kernel_);
}

void PreparedKernel::execute(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                             std::byte* workspace, size_t workspace_size) const {
  if (workspace_bytes_ > 0 && (!workspace || workspace_size < workspace_bytes_))
    internal_error("backend '" + backend_ + "' needs a workspace of " + std::to_string(workspace_bytes_) + " bytes for " +
                   what_ + ", given " + std::to_string(workspace_size));
  // Per thread and reused, so that a step allocates nothing once warm.
  thread_local std::vector<rk_tensor_view> in_views, out_views;
  auto fill = [](std::vector<rk_tensor_view>& views, const std::vector<Type>& types, const auto& data) {
    views.resize(types.size());
    for (size_t i = 0; i < types.size(); ++i) {
      views[i] = rk_tensor_view{};
      views[i].struct_size = sizeof(rk_tensor_view);
      views[i].type = plugin_host::c_type(types[i]);
      views[i].data = const_cast<void*>(static_cast<const void*>(data.at(i)));
    }
  };
  fill(in_views, inputs_, inputs);
  fill(out_views, outputs_, outputs);
  std::unique_lock<std::mutex> serialized;
  if (one_at_a_time_) serialized = std::unique_lock<std::mutex>(*one_at_a_time_);
  if (rk_error* error = api_->execute(kernel_, in_views.data(), in_views.size(), out_views.data(), out_views.size(),
                                      workspace_bytes_ ? workspace : nullptr, workspace_bytes_))
    fail("backend '" + backend_ + "' failed on " + what_ + ": " + plugin_host::take_error(error));
}

void PreparedKernel::execute_allocating_workspace(const std::vector<const void*>& inputs,
                                                  const std::vector<void*>& outputs) const {
  // Over-allocated by an alignment, then aligned: the host promises plugins 64-byte workspaces.
  std::vector<std::byte> bytes(workspace_bytes_ + static_cast<size_t>(kBufferAlignment));
  void* start = bytes.data();
  size_t space = bytes.size();
  void* aligned = std::align(static_cast<size_t>(kBufferAlignment), workspace_bytes_, start, space);
  execute(inputs, outputs, static_cast<std::byte*>(aligned), workspace_bytes_);
}

BackendInstance::BackendInstance(const PluginRegistry& plugins, const std::string& name, const Params& options)
    : api_(plugins.backend(name)), name_(name) {
  if (!api_) {
    std::string known;
    for (const std::string& b : plugins.backend_names()) known += (known.empty() ? "" : ", ") + b;
    fail("unknown backend '" + name + "'" + did_you_mean(name, plugins.backend_names()) +
         " (available: " + (known.empty() ? "none found" : known) + ")");
  }
  abi_minor_ = plugins.backend_abi_minor(name);
  if (!(api_->flags & RK_BACKEND_THREAD_SAFE)) one_at_a_time_ = &serializing_mutex(api_);
  plugin_host::CValues values;
  const std::vector<rk_value> c_options = values.params(options);
  if (rk_error* error = api_->create(c_options.data(), c_options.size(), &backend_))
    fail("backend '" + name + "' could not start: " + plugin_host::take_error(error));
}

BackendInstance::~BackendInstance() {
  if (api_->destroy) api_->destroy(backend_);
}

std::unique_ptr<PreparedKernel> BackendInstance::prepare(Prim prim, const Params& params, const std::vector<Type>& inputs,
                                                         const std::vector<Type>& outputs, const std::string& what) {
  return prepare(prim_name(prim), params, inputs, outputs, what);
}

bool BackendInstance::supports(Prim prim, const Params& params, const std::vector<Type>& inputs,
                               const std::vector<Type>& outputs) const {
  if (!knows_dtypes(abi_minor_, inputs, outputs)) return false;
  const plugin_host::CEquationView view(prim_name(prim), params, inputs, outputs);
  return api_->supports(backend_, view.get()) != 0;
}

std::optional<double> BackendInstance::expected_ns(Prim prim, const Params& params, const std::vector<Type>& inputs,
                                                   const std::vector<Type>& outputs) const {
  if (abi_minor_ < 7 || !RK_HAS_FIELD(api_, rk_backend_api, expected_ns) || !api_->expected_ns) return std::nullopt;
  if (!knows_dtypes(abi_minor_, inputs, outputs)) return std::nullopt;
  const plugin_host::CEquationView view(prim_name(prim), params, inputs, outputs);
  const double ns = api_->expected_ns(backend_, view.get());
  if (!(ns >= 0) || !std::isfinite(ns)) return std::nullopt;  // none, or an answer that is not a time
  return ns;
}

std::unique_ptr<PreparedKernel> BackendInstance::prepare(std::string_view primitive, const Params& params,
                                                         const std::vector<Type>& inputs, const std::vector<Type>& outputs,
                                                         const std::string& what) {
  if (!knows_dtypes(abi_minor_, inputs, outputs)) return nullptr;
  const plugin_host::CEquationView view(primitive, params, inputs, outputs);
  if (!api_->supports(backend_, view.get())) return nullptr;
  std::unique_ptr<PreparedKernel> k(new PreparedKernel());
  k->api_ = api_;  // first, so that a kernel made before a failure is destroyed
  if (rk_error* error = api_->prepare(backend_, view.get(), &k->kernel_, &k->workspace_bytes_))
    fail("backend '" + name_ + "' failed to prepare " + what + ": " + plugin_host::take_error(error));
  // A workspace is placed in the arena, counted in int64 bytes: an answer past that is broken.
  if (k->workspace_bytes_ > static_cast<size_t>(INT64_MAX / 2))
    fail("backend '" + name_ + "' answered prepare for " + what + " with a workspace of " +
         std::to_string(k->workspace_bytes_) + " bytes, more than any arena can hold");
  k->backend_ = name_;
  k->what_ = what;
  k->inputs_ = inputs;
  k->outputs_ = outputs;
  k->one_at_a_time_ = one_at_a_time_;
  return k;
}

BackendSet::BackendSet(const BackendOptions& options)
    : fuse_(options.fusion != BackendOptions::Fusion::kOff), debug_prints_(options.debug_prints) {
  const PluginRegistry& plugins = options.plugins ? *options.plugins : default_plugins();
  const std::vector<std::string> preference = preference_or_fastest(options);
  if (preference.empty()) fail("no backend given, and none of onednn, highway and reference is installed");
  if (options.threads < 0)
    fail("the number of threads must be at least 1 (or 0 for every core), not " + std::to_string(options.threads));
  for (const BackendOptions::BackendOption& option : options.backend_options)
    if (std::find(preference.begin(), preference.end(), option.backend) == preference.end()) {
      std::string listed;
      for (const std::string& b : preference) listed += (listed.empty() ? "" : ", ") + b;
      fail("backend option " + option.backend + "." + option.name + " is for a backend not in the list (" + listed + ")");
    }
  for (const std::string& name : preference) {
    Params created_with;
    if (options.threads > 0) created_with.set("num_threads", ParamValue::of_int(options.threads));
    for (const BackendOptions::BackendOption& option : options.backend_options)
      if (option.backend == name)
        created_with.set(option.name, std::holds_alternative<int64_t>(option.value)
                                          ? ParamValue::of_int(std::get<int64_t>(option.value))
                                          : ParamValue::of_string(std::get<std::string>(option.value)));
    backends_.push_back(std::make_unique<BackendInstance>(plugins, name, created_with));
  }
}

namespace {

void device_types_of(const FlatGraph& graph, const FlatEquation& eqn, std::vector<Type>& in, std::vector<Type>& out) {
  for (ValueId v : eqn.inputs) in.push_back(device(graph.values[v].type));
  for (ValueId v : eqn.outputs) out.push_back(device(graph.values[v].type));
}

}  // namespace

std::unique_ptr<PreparedKernel> BackendSet::bind(const FlatGraph& graph, const FlatEquation& eqn) {
  const int b = chosen(graph, eqn);
  if (b < 0) fail("no backend in the preference list supports " + where_of(eqn));
  std::vector<Type> in, out;
  device_types_of(graph, eqn, in, out);
  if (auto kernel = backends_[static_cast<size_t>(b)]->prepare(eqn.prim, eqn.params, in, out, where_of(eqn))) return kernel;
  internal_error("backend '" + backends_[static_cast<size_t>(b)]->name() + "' supports " + where_of(eqn) + " but prepared nothing for it");
}

int BackendSet::chosen(const FlatGraph& graph, const FlatEquation& eqn) const {
  std::vector<Type> in, out;
  device_types_of(graph, eqn, in, out);
  int first = -1;
  for (size_t i = 0; i < backends_.size() && first < 0; ++i)
    if (backends_[i]->supports(eqn.prim, eqn.params, in, out)) first = static_cast<int>(i);
  if (first < 0) return -1;
  std::optional<double> best = backends_[static_cast<size_t>(first)]->expected_ns(eqn.prim, eqn.params, in, out);
  if (!best) return first;  // no estimate to weigh against: the preference stands
  int choice = first;
  for (size_t i = static_cast<size_t>(first) + 1; i < backends_.size(); ++i)
    if (const auto ns = backends_[i]->expected_ns(eqn.prim, eqn.params, in, out);
        ns && *ns < *best && backends_[i]->supports(eqn.prim, eqn.params, in, out))
      best = ns, choice = static_cast<int>(i);
  return choice;
}

}  // namespace rematkit
