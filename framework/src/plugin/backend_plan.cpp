#include "rematkit/backend_plan.hpp"

#include <algorithm>
#include <cstring>

#include "equation_view.hpp"
#include "host_api.hpp"
#include "rematkit/plugin/rk_backend.h"

namespace rematkit {
namespace {

// One value as a backend sees it: a 64-byte aligned host buffer of its dtype.
struct HostBuffer {
  Type type;
  std::byte* data = nullptr;

  explicit HostBuffer(const Type& t) : type(t) {
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(t.bytes(), 1));
    data = static_cast<std::byte*>(::operator new[]((bytes + 63) / 64 * 64, std::align_val_t{64}));
  }
  ~HostBuffer() { ::operator delete[](data, std::align_val_t{64}); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  void fill(const Tensor& t) {
    for (int64_t i = 0; i < t.size(); ++i) {
      switch (type.dtype) {
        case DType::kF32: reinterpret_cast<float*>(data)[i] = static_cast<float>(t.data[i]); break;
        case DType::kI32: reinterpret_cast<int32_t*>(data)[i] = static_cast<int32_t>(t.data[i]); break;
        case DType::kBool: reinterpret_cast<uint8_t*>(data)[i] = t.data[i] != 0; break;
      }
    }
  }
  Tensor to_tensor() const {
    Tensor t{type, std::vector<double>(static_cast<size_t>(type.num_elements()))};
    for (int64_t i = 0; i < t.size(); ++i) {
      switch (type.dtype) {
        case DType::kF32: t.data[i] = reinterpret_cast<const float*>(data)[i]; break;
        case DType::kI32: t.data[i] = reinterpret_cast<const int32_t*>(data)[i]; break;
        case DType::kBool: t.data[i] = reinterpret_cast<const uint8_t*>(data)[i]; break;
      }
    }
    return t;
  }
  rk_tensor_view view() const {
    rk_tensor_view v{};
    v.struct_size = sizeof(rk_tensor_view);
    v.type = plugin_host::c_type(type);
    v.data = data;
    return v;
  }
};

Type device(Type t) {
  t.space = MemorySpace::kDevice;
  return t;
}

std::string where_of(const FlatEquation& eqn) {
  return std::string(prim_name(eqn.prim)) + " at " + (eqn.where.file.empty() ? "<program>" : eqn.where.file) + ":" +
         std::to_string(eqn.where.line);
}

}  // namespace

struct BackendPlan::Instances {
  std::vector<std::pair<const rk_backend_api*, rk_backend*>> backends;  // in preference order
  std::vector<std::pair<const rk_backend_api*, rk_kernel*>> kernels;    // per step
  std::vector<size_t> workspace_bytes;                                    // per step
  ~Instances() {
    for (auto& [api, kernel] : kernels)
      if (api->kernel_destroy) api->kernel_destroy(kernel);
    for (auto& [api, backend] : backends)
      if (api->destroy) api->destroy(backend);
  }
};

BackendPlan::BackendPlan(const FlatGraph& graph, const std::vector<int>& eqns, const PluginRegistry& plugins,
                         const std::vector<std::string>& preference)
    : graph_(graph), eqns_(eqns), instances_(std::make_unique<Instances>()) {
  if (preference.empty()) fail("no backend given");
  for (const std::string& name : preference) {
    const rk_backend_api* api = plugins.backend(name);
    if (!api) {
      std::string known;
      for (const std::string& b : plugins.backend_names()) known += (known.empty() ? "" : ", ") + b;
      fail("unknown backend '" + name + "' (available: " + (known.empty() ? "none found" : known) + ")");
    }
    rk_backend* backend = nullptr;
    if (rk_error* error = api->create(nullptr, 0, &backend))
      fail("backend '" + name + "' could not start: " + plugin_host::take_error(error));
    instances_->backends.emplace_back(api, backend);
  }
  for (int e : eqns_) {
    const FlatEquation& eqn = graph.eqns[e];
    std::vector<Type> in, out;
    for (ValueId v : eqn.inputs) in.push_back(device(graph.values[v].type));
    for (ValueId v : eqn.outputs) out.push_back(device(graph.values[v].type));
    const plugin_host::CEquationView view(prim_name(eqn.prim), eqn.params, in, out);
    bool bound = false;
    for (size_t b = 0; b < instances_->backends.size() && !bound; ++b) {
      auto [api, backend] = instances_->backends[b];
      if (!api->supports(backend, view.get())) continue;
      rk_kernel* kernel = nullptr;
      size_t workspace = 0;
      if (rk_error* error = api->prepare(backend, view.get(), &kernel, &workspace))
        fail("backend '" + preference[b] + "' failed to prepare " + where_of(eqn) + ": " + plugin_host::take_error(error));
      instances_->kernels.emplace_back(api, kernel);
      instances_->workspace_bytes.push_back(workspace);
      backend_names_.push_back(preference[b]);
      bound = true;
    }
    if (!bound) fail("no backend in the preference list supports " + where_of(eqn));
  }
}

BackendPlan::~BackendPlan() = default;

void BackendPlan::run(std::vector<std::optional<Tensor>>& values) const {
  std::vector<std::byte> workspace;
  for (size_t s = 0; s < eqns_.size(); ++s) {
    const FlatEquation& eqn = graph_.eqns[eqns_[s]];
    std::vector<std::unique_ptr<HostBuffer>> inputs, outputs;
    std::vector<rk_tensor_view> in_views, out_views;
    for (ValueId v : eqn.inputs) {
      const Value& value = graph_.values[v];
      inputs.push_back(std::make_unique<HostBuffer>(device(value.type)));
      if (value.origin == ValueOrigin::kLiteral) {
        inputs.back()->fill(Tensor::filled(device(value.type), value.literal));
      } else {
        if (!values[v]) internal_error("a backend step reads a value that was neither computed nor given");
        inputs.back()->fill(*values[v]);
      }
      in_views.push_back(inputs.back()->view());
    }
    for (ValueId v : eqn.outputs) {
      outputs.push_back(std::make_unique<HostBuffer>(device(graph_.values[v].type)));
      out_views.push_back(outputs.back()->view());
    }
    workspace.resize(instances_->workspace_bytes[s]);
    auto [api, kernel] = instances_->kernels[s];
    if (rk_error* error = api->execute(kernel, in_views.data(), in_views.size(), out_views.data(), out_views.size(),
                                       workspace.data(), workspace.size()))
      fail("backend '" + backend_names_[s] + "' failed on " + where_of(eqn) + ": " + plugin_host::take_error(error));
    for (size_t i = 0; i < eqn.outputs.size(); ++i) values[eqn.outputs[i]] = outputs[i]->to_tensor();
  }
}

}  // namespace rematkit
