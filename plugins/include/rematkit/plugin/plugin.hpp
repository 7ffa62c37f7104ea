// Header-only help for writing rematkit plugins in C++ (C++17): keeps exceptions inside the
// plugin, reads values and equation views. Sees only the C ABI; never links rematkit.
#pragma once
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/plugin/rk_backend.h"
#include "rematkit/plugin/rk_plugin.h"
#include "rematkit/plugin/rk_policy.h"

namespace rematkit::plugin {

// The host api this plugin was initialized with.
inline const rk_host_api*& host() {
  static const rk_host_api* api = nullptr;
  return api;
}

// An initialize() that only remembers the host.
inline rk_error* remember_host(const rk_host_api* api) {
  host() = api;
  return nullptr;
}

// Thrown inside a plugin for bad policy arguments; becomes RK_INVALID_ARGUMENT with its message.
struct ArgumentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown inside a plugin to pass on an error another plugin returned (e.g. a nested policy's).
struct PassOn {
  rk_error* error;
};

// Calls a nested policy; its error is passed on.
inline void decide_nested(const rk_value& policy, const rk_equation_view* eqn, rk_decision* out) {
  if (rk_error* err = policy.policy_api->decide(policy.policy, eqn, out)) throw PassOn{err};
}

inline rk_error* make_error(rk_code code, const std::string& message) noexcept {
  try {
    return host()->error_new(code, message.c_str());
  } catch (...) {
    return host()->error_new(RK_INTERNAL, "error while reporting an error");
  }
}

// Runs `body` and turns any exception into an rk_error, so none crosses the boundary.
template <typename Body>
rk_error* guarded(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const PassOn& passed) {
    return passed.error;
  } catch (const ArgumentError& e) {
    return make_error(RK_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return make_error(RK_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return make_error(RK_INTERNAL, e.what());
  } catch (...) {
    return make_error(RK_INTERNAL, "unknown exception");
  }
}

// A policy written as a decision function: `make` builds one from the call arguments, and
// policy_table<make>(name, signature) is its rk_policy_api.
struct DecisionFunction {
  std::function<void(const rk_equation_view* eqn, rk_decision* out)> decide;
};
using PolicyMaker = DecisionFunction (*)(const rk_value* args, size_t num_args);

template <PolicyMaker make>
rk_error* create_policy(const rk_value* args, size_t num_args, rk_policy** out) {
  return guarded([&] { *out = reinterpret_cast<rk_policy*>(new DecisionFunction(make(args, num_args))); });
}
inline void destroy_policy(rk_policy* policy) { delete reinterpret_cast<DecisionFunction*>(policy); }
inline rk_error* decide_policy(rk_policy* policy, const rk_equation_view* eqn, rk_decision* out) {
  return guarded([&] { reinterpret_cast<DecisionFunction*>(policy)->decide(eqn, out); });
}
template <PolicyMaker make>
constexpr rk_policy_api policy_table(const char* name, const char* signature) {
  return {sizeof(rk_policy_api), name, &create_policy<make>, &destroy_policy, &decide_policy, signature};
}

inline std::string_view primitive(const rk_equation_view* eqn) { return eqn->primitive; }

// The equation param called `name`, or nullptr.
inline const rk_value* find_param(const rk_equation_view* eqn, std::string_view name) {
  for (size_t i = 0; i < eqn->num_params; ++i)
    if (eqn->params[i].name && name == eqn->params[i].name) return &eqn->params[i];
  return nullptr;
}

inline bool is_string(const rk_value& v) { return v.kind == RK_VALUE_STRING; }

// The integers of a list value (a single int is a one-element list).
inline std::vector<int64_t> ints_of(const rk_value& v) {
  if (v.kind == RK_VALUE_INT) return {v.int_value};
  std::vector<int64_t> out;
  if (v.kind == RK_VALUE_LIST)
    for (size_t i = 0; i < v.num_items; ++i) out.push_back(v.items[i].int_value);
  return out;
}

// Bytes of an equation's outputs, as stored (bool takes one byte).
inline double output_bytes(const rk_equation_view* eqn) {
  double total = 0;
  for (size_t i = 0; i < eqn->num_outputs; ++i) {
    double n = eqn->outputs[i].dtype == RK_DTYPE_BOOL ? 1 : 4;
    for (int32_t d = 0; d < eqn->outputs[i].rank; ++d) n *= static_cast<double>(eqn->outputs[i].shape[d]);
    total += n;
  }
  return total;
}

}  // namespace rematkit::plugin
