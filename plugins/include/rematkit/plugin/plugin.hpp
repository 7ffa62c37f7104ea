// Header-only help for writing rematkit plugins in C++ (C++17): keeps exceptions inside the
// plugin, reads values and equation views (the primitive as a Prim, params as typed values). Sees
// only the C ABI and the dependency-free primitive table; never links rematkit.
#pragma once
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/plugin/dimension_numbers.hpp"
#include "rematkit/plugin/primitive_table.hpp"
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

// A line for the host's log (warnings and errors always show; the rest when REMATKIT_LOG is set).
inline void log(rk_log_level level, const std::string& message) {
  if (host() && RK_HAS_FIELD(host(), rk_host_api, log) && host()->log) host()->log(level, message.c_str());
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
// `survey`, when set, first sees every equation the policy will decide (rk_policy_api::survey).
struct DecisionFunction {
  std::function<void(const rk_equation_view* eqn, rk_decision* out)> decide;
  std::function<void(const rk_equation_view* eqns, size_t num_eqns)> survey = {};
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
inline rk_error* survey_policy(rk_policy* policy, const rk_equation_view* eqns, size_t num_eqns) {
  return guarded([&] {
    const DecisionFunction& f = *reinterpret_cast<DecisionFunction*>(policy);
    if (f.survey) f.survey(eqns, num_eqns);
  });
}
template <PolicyMaker make>
constexpr rk_policy_api policy_table(const char* name, const char* signature) {
  return {sizeof(rk_policy_api), name, &create_policy<make>, &destroy_policy, &decide_policy, signature, &survey_policy};
}
// A field of an equation view from a host of ABI 1.4 or later, else `absent`.
inline const char* site_of(const rk_equation_view* eqn) {
  return RK_HAS_FIELD(eqn, rk_equation_view, site) && eqn->site ? eqn->site : "";
}
inline double flops_of(const rk_equation_view* eqn) {
  return RK_HAS_FIELD(eqn, rk_equation_view, flops) ? eqn->flops : 0.0;
}

inline std::string_view primitive(const rk_equation_view* eqn) { return eqn->primitive; }
// The equation's primitive as a row of rematkit's table; nullopt for a name this SDK does not know
// (a newer rematkit's primitive), which a plugin declines.
inline std::optional<Prim> primitive_of(const rk_equation_view* eqn) { return lookup_prim(eqn->primitive); }

// Whether any operand or result of the equation is complex (c64, c128: ABI 1.8). A backend that
// runs real arithmetic only declines these, whatever their element size suggests.
inline bool has_complex_operand(const rk_equation_view* eqn) {
  auto complex = [](const rk_type& t) { return t.dtype == RK_DTYPE_C64 || t.dtype == RK_DTYPE_C128; };
  for (size_t i = 0; i < eqn->num_inputs; ++i)
    if (complex(eqn->inputs[i])) return true;
  for (size_t i = 0; i < eqn->num_outputs; ++i)
    if (complex(eqn->outputs[i])) return true;
  return false;
}

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

// Typed params. The host checks every param against the primitive table before a plugin sees it, so
// these throw ArgumentError only when a plugin reads a param its primitive does not have.
inline const rk_value& required_param(const rk_equation_view* eqn, std::string_view name) {
  const rk_value* v = find_param(eqn, name);
  if (!v) throw ArgumentError(std::string(eqn->primitive) + " has no parameter " + std::string(name));
  return *v;
}
inline int64_t int_param(const rk_equation_view* eqn, std::string_view name) {
  const rk_value& v = required_param(eqn, name);
  if (v.kind != RK_VALUE_INT) throw ArgumentError(std::string(eqn->primitive) + ": " + std::string(name) + " is not an integer");
  return v.int_value;
}
inline std::vector<int64_t> ints_param(const rk_equation_view* eqn, std::string_view name) {
  return ints_of(required_param(eqn, name));
}
// dot_general's dimension_numbers, ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)).
inline DotDims dot_dims(const rk_equation_view* eqn) {
  const rk_value& v = required_param(eqn, "dimension_numbers");
  auto pair_at = [&](size_t i) -> const rk_value& {
    if (v.kind != RK_VALUE_LIST || v.num_items != 2 || v.items[i].kind != RK_VALUE_LIST || v.items[i].num_items != 2)
      throw ArgumentError(std::string(eqn->primitive) + ": dimension_numbers is not ((lc, rc), (lb, rb))");
    return v.items[i];
  };
  const rk_value& contract = pair_at(0);
  const rk_value& batch = pair_at(1);
  return DotDims{ints_of(contract.items[0]), ints_of(contract.items[1]), ints_of(batch.items[0]), ints_of(batch.items[1])};
}

// An optional list param (slice's strides): empty when None or missing.
inline std::vector<int64_t> ints_param_or_none(const rk_equation_view* eqn, std::string_view name) {
  const rk_value* v = find_param(eqn, name);
  return v && v->kind != RK_VALUE_NONE ? ints_of(*v) : std::vector<int64_t>{};
}
inline bool bool_param(const rk_equation_view* eqn, std::string_view name) {
  const rk_value* v = find_param(eqn, name);
  return v && v->kind == RK_VALUE_BOOL && v->int_value != 0;
}
// pad's padding_config, ((low, high, interior), ...).
inline std::vector<PaddingDim> padding_config(const rk_equation_view* eqn) {
  const rk_value& v = required_param(eqn, "padding_config");
  std::vector<PaddingDim> config;
  for (size_t i = 0; v.kind == RK_VALUE_LIST && i < v.num_items; ++i) {
    const std::vector<int64_t> triple = ints_of(v.items[i]);
    if (triple.size() != 3) throw ArgumentError(std::string(eqn->primitive) + ": padding_config is not ((lo, hi, interior), ...)");
    config.push_back(PaddingDim{triple[0], triple[1], triple[2]});
  }
  return config;
}

// gather's or scatter-add's dimension_numbers (a keyword call, RK_VALUE_LIST of named items).
inline IndexingDims indexing_dims(const rk_equation_view* eqn) {
  const rk_value& v = required_param(eqn, "dimension_numbers");
  IndexingDims dims;
  for (size_t i = 0; v.kind == RK_VALUE_LIST && i < v.num_items; ++i) {
    const std::string_view key = v.items[i].name ? v.items[i].name : "";
    std::vector<int64_t>* field = key == "offset_dims" || key == "update_window_dims"        ? &dims.window_dims
                                  : key == "collapsed_slice_dims" || key == "inserted_window_dims" ? &dims.collapsed_dims
                                  : key == "start_index_map" || key == "scatter_dims_to_operand_dims" ? &dims.index_map
                                  : key == "operand_batching_dims"                              ? &dims.operand_batching_dims
                                                                                                : &dims.indices_batching_dims;
    *field = ints_of(v.items[i]);
  }
  return dims;
}
// A ((low, high), ...) param: conv_general_dilated's and the windows' padding.
inline std::vector<PadPair> padding_pairs(const rk_equation_view* eqn, std::string_view name) {
  const rk_value& v = required_param(eqn, name);
  std::vector<PadPair> pairs;
  for (size_t i = 0; v.kind == RK_VALUE_LIST && i < v.num_items; ++i) {
    const std::vector<int64_t> pair = ints_of(v.items[i]);
    if (pair.size() != 2) throw ArgumentError(std::string(eqn->primitive) + ": " + std::string(name) + " is not ((lo, hi), ...)");
    pairs.push_back(PadPair{pair[0], pair[1]});
  }
  return pairs;
}
// conv_general_dilated's dimension_numbers (a keyword call, RK_VALUE_LIST of named items).
inline ConvDims conv_dims(const rk_equation_view* eqn) {
  const rk_value& v = required_param(eqn, "dimension_numbers");
  ConvDims dims;
  for (size_t i = 0; v.kind == RK_VALUE_LIST && i < v.num_items; ++i) {
    const std::string_view key = v.items[i].name ? v.items[i].name : "";
    std::vector<int64_t>* field = key == "lhs_spec" ? &dims.lhs_spec : key == "rhs_spec" ? &dims.rhs_spec : &dims.out_spec;
    *field = ints_of(v.items[i]);
  }
  return dims;
}
inline ConvParams conv_params(const rk_equation_view* eqn) {
  ConvParams c;
  c.window_strides = ints_param(eqn, "window_strides");
  c.padding = padding_pairs(eqn, "padding");
  c.lhs_dilation = ints_param(eqn, "lhs_dilation");
  c.rhs_dilation = ints_param(eqn, "rhs_dilation");
  c.dims = conv_dims(eqn);
  c.feature_group_count = int_param(eqn, "feature_group_count");
  c.batch_group_count = int_param(eqn, "batch_group_count");
  return c;
}
// A window's params; dilations of 1 where the primitive has none (select_and_scatter_add).
inline WindowParams window_params(const rk_equation_view* eqn) {
  WindowParams w;
  w.window_dimensions = ints_param(eqn, "window_dimensions");
  w.window_strides = ints_param(eqn, "window_strides");
  w.padding = padding_pairs(eqn, "padding");
  const std::vector<int64_t> ones(w.window_dimensions.size(), 1);
  w.base_dilation = find_param(eqn, "base_dilation") ? ints_param(eqn, "base_dilation") : ones;
  w.window_dilation = find_param(eqn, "window_dilation") ? ints_param(eqn, "window_dilation") : ones;
  return w;
}
// select_prim: true for ge (the window's max), false for le (its min).
inline bool selects_max(const rk_equation_view* eqn) {
  const rk_value& v = required_param(eqn, "select_prim");
  return v.kind == RK_VALUE_STRING && v.string_value && std::string_view(v.string_value) == "ge";
}

// mode: GatherScatterMode.X (or its value); FILL_OR_DROP when missing.
inline IndexMode index_mode(const rk_equation_view* eqn) {
  const rk_value* v = find_param(eqn, "mode");
  if (!v || v->kind == RK_VALUE_NONE) return IndexMode::kFillOrDrop;
  if (v->kind == RK_VALUE_INT) return static_cast<IndexMode>(v->int_value);
  const std::string_view text = v->kind == RK_VALUE_STRING ? v->string_value : "";
  if (text.find("PROMISE_IN_BOUNDS") != std::string_view::npos) return IndexMode::kPromiseInBounds;
  if (text.find("CLIP") != std::string_view::npos) return IndexMode::kClip;
  return IndexMode::kFillOrDrop;
}
// fft's fft_type: FftType.X or its value (the host has checked it is one of the four).
inline FftKind fft_kind(const rk_equation_view* eqn) {
  const rk_value& v = required_param(eqn, "fft_type");
  const int code = v.kind == RK_VALUE_INT ? static_cast<int>(v.int_value)
                                         : v.kind == RK_VALUE_STRING ? fft_kind_code(v.string_value) : -1;
  if (code < 0 || code > 3) throw ArgumentError("fft_type is not FftType.FFT, IFFT, RFFT or IRFFT");
  return static_cast<FftKind>(code);
}
// gather's fill_value: a number, or nullopt for None.
inline std::optional<double> fill_value(const rk_equation_view* eqn) {
  const rk_value* v = find_param(eqn, "fill_value");
  if (!v) return std::nullopt;
  if (v->kind == RK_VALUE_INT || v->kind == RK_VALUE_BOOL) return static_cast<double>(v->int_value);
  if (v->kind == RK_VALUE_FLOAT) return v->float_value;
  return std::nullopt;
}

// round's rounding_method: RoundingMethod.TO_NEAREST_EVEN (1) rather than AWAY_FROM_ZERO (0, the
// default when missing).
inline bool rounds_to_nearest_even(const rk_equation_view* eqn) {
  const rk_value* v = find_param(eqn, "rounding_method");
  if (!v) return false;
  if (v->kind == RK_VALUE_INT) return v->int_value == 1;
  const std::string_view text = v->kind == RK_VALUE_STRING && v->string_value ? v->string_value : "";
  return text.size() >= 15 && text.substr(text.size() - 15) == "TO_NEAREST_EVEN";
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
