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
#include "rematkit/plugin/param_reader.hpp"
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
// An optional list param (slice's strides): empty when None or missing.
inline std::vector<int64_t> ints_param_or_none(const rk_equation_view* eqn, std::string_view name) {
  const rk_value* v = find_param(eqn, name);
  return v && v->kind != RK_VALUE_NONE ? ints_of(*v) : std::vector<int64_t>{};
}
inline bool bool_param(const rk_equation_view* eqn, std::string_view name) {
  const rk_value* v = find_param(eqn, name);
  return v && v->kind == RK_VALUE_BOOL && v->int_value != 0;
}
// An equation view's params as a param source (param_reader.hpp). The host has checked every param
// against the primitive table (with the same readers), so only the problems a reader cannot go on
// from are ArgumentErrors here; the rest let the reader go on with what it has.
class ViewParams {
 public:
  using Value = const rk_value*;
  explicit ViewParams(const rk_equation_view* eqn) : eqn_(eqn) {}

  Value find(std::string_view key) const { return find_param(eqn_, key); }
  param_reader::ValueKind kind(Value v) const {
    using K = param_reader::ValueKind;
    switch (v->kind) {
      case RK_VALUE_NONE: return K::kNone;
      case RK_VALUE_BOOL: return K::kBool;
      case RK_VALUE_INT: return K::kInt;
      case RK_VALUE_FLOAT: return K::kFloat;
      case RK_VALUE_STRING: return K::kName;  // the host passes names and strings alike
      case RK_VALUE_LIST: return v->string_value ? K::kCall : K::kSequence;
      default: return K::kOther;
    }
  }
  int64_t integer(Value v) const { return v->int_value; }
  double number(Value v) const { return v->float_value; }
  std::string_view text(Value v) const { return v->string_value ? v->string_value : ""; }
  size_t size(Value v) const { return v->num_items; }
  Value item(Value v, size_t i) const { return &v->items[i]; }
  std::string_view keyword(Value argument) const { return argument->name ? argument->name : ""; }
  Value argument_value(Value argument) const { return argument; }
  std::string describe(Value) const { return {}; }
  std::vector<int64_t> ints(Value v, std::string_view) const { return ints_of(*v); }
  int64_t int_param(std::string_view key) const { return plugin::int_param(eqn_, key); }
  std::string name_param(std::string_view key) const {
    const rk_value& v = required_param(eqn_, key);
    return v.kind == RK_VALUE_STRING && v.string_value ? v.string_value : "";
  }
  void reject(param_reader::Problem problem, std::string_view key, const std::string&) const {
    const std::string prim(eqn_->primitive);
    switch (problem) {
      case param_reader::Problem::kMissing: throw ArgumentError(prim + " has no parameter " + std::string(key));
      case param_reader::Problem::kDotDims:
        throw ArgumentError(prim + ": dimension_numbers is not ((lc, rc), (lb, rb))");
      case param_reader::Problem::kPaddingConfigRow:
        throw ArgumentError(prim + ": padding_config is not ((lo, hi, interior), ...)");
      case param_reader::Problem::kPaddingPair:
        throw ArgumentError(prim + ": " + std::string(key) + " is not ((lo, hi), ...)");
      case param_reader::Problem::kFftType: throw ArgumentError("fft_type is not FftType.FFT, IFFT, RFFT or IRFFT");
      case param_reader::Problem::kPaddingConfig: case param_reader::Problem::kPaddingPairs:
      case param_reader::Problem::kConvDims: case param_reader::Problem::kIndexingDims:
      case param_reader::Problem::kUnknownField: case param_reader::Problem::kMissingField:
      case param_reader::Problem::kSelectPrim: case param_reader::Problem::kIndexMode:
      case param_reader::Problem::kFillValue: case param_reader::Problem::kRoundingMethod: return;
    }
  }

 private:
  const rk_equation_view* eqn_;
};

// dot_general's dimension_numbers, ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)).
inline DotDims dot_dims(const rk_equation_view* eqn) { return param_reader::dot_dims(ViewParams(eqn)); }
// pad's padding_config, ((low, high, interior), ...).
inline std::vector<PaddingDim> padding_config(const rk_equation_view* eqn) {
  return param_reader::padding_config(ViewParams(eqn));
}
// gather's or scatter-add's dimension_numbers (a keyword call, RK_VALUE_LIST of named items).
inline IndexingDims indexing_dims(const rk_equation_view* eqn) {
  return param_reader::indexing_dims(ViewParams(eqn), primitive_of(eqn) == Prim::kScatterAdd
                                                          ? param_reader::kScatterDimensionNumbers
                                                          : param_reader::kGatherDimensionNumbers);
}
// A ((low, high), ...) param: conv_general_dilated's and the windows' padding.
inline std::vector<PadPair> padding_pairs(const rk_equation_view* eqn, std::string_view name) {
  return param_reader::padding_pairs(ViewParams(eqn), name);
}
// conv_general_dilated's dimension_numbers (a keyword call, RK_VALUE_LIST of named items).
inline ConvDims conv_dims(const rk_equation_view* eqn) { return param_reader::conv_dims(ViewParams(eqn)); }
inline ConvParams conv_params(const rk_equation_view* eqn) { return param_reader::conv_params(ViewParams(eqn)); }
// A window's params; dilations of 1 where the primitive has none (select_and_scatter_add).
inline WindowParams window_params(const rk_equation_view* eqn) { return param_reader::window_params(ViewParams(eqn)); }
// select_prim: true for ge (the window's max), false for le (its min).
inline bool selects_max(const rk_equation_view* eqn) { return param_reader::selects_max(ViewParams(eqn)); }
// mode: GatherScatterMode.X (or its value); FILL_OR_DROP when missing.
inline IndexMode index_mode(const rk_equation_view* eqn) { return param_reader::index_mode(ViewParams(eqn)); }
// fft's fft_type: FftType.X or its value (the host has checked it is one of the four).
inline FftKind fft_kind(const rk_equation_view* eqn) { return param_reader::fft_kind(ViewParams(eqn)); }
// gather's fill_value: a number (nan, inf and -inf among them), or nullopt for None.
inline std::optional<double> fill_value(const rk_equation_view* eqn) {
  return param_reader::fill_value(ViewParams(eqn));
}
// round's rounding_method: RoundingMethod.TO_NEAREST_EVEN (1) rather than AWAY_FROM_ZERO (0, the
// default when missing).
inline bool rounds_to_nearest_even(const rk_equation_view* eqn) {
  return param_reader::rounds_to_nearest_even(ViewParams(eqn));
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
