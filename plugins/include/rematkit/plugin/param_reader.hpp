// One reader per structured param (dot_general's, conv_general_dilated's, gather's and scatter's
// dimension numbers, pad's padding config, windows, modes, fill values, fft types, rounding),
// written once over a param source, so that the core (over its Params, ir/primitive_params.cpp) and
// the SDK (over an rk_equation_view, plugin.hpp) read them alike. C++17, no dependencies.
//
// A param source S, an adapter over one equation's params, offers:
//   using Value = <a pointer to one value>;
//   Value find(std::string_view key) const;              nullptr when the param is missing
//   ValueKind kind(Value) const;
//   int64_t integer(Value) const;                        kInt, and kBool as 0 or 1
//   double number(Value) const;                          kFloat
//   std::string_view text(Value) const;                  kString and kName; kCall: the call's name
//   size_t size(Value) const; Value item(Value, size_t i) const;   kSequence's items, kCall's arguments
//   std::string_view keyword(Value argument) const;      a call argument's keyword ("" if positional)
//   Value argument_value(Value argument) const;          what a call argument holds
//   std::string describe(Value) const;                   the value as jaxpr prints it, for messages
//   std::vector<int64_t> ints(Value, std::string_view key) const;    a tuple of integers, checked
//   int64_t int_param(std::string_view key) const;                    an integer param, checked
//   std::string name_param(std::string_view key) const;              a name param, checked
//   void reject(Problem, std::string_view key, const std::string& message) const;
// The leaf readers (ints, int_param, name_param) check as the source always has. reject() either
// throws, its own error with `message` or words of its own, or returns for a problem the source
// leaves to its host to have checked; the reader then goes on with what it has (an empty or default
// value). It never returns for the problems marked "fatal".
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/plugin/dimension_numbers.hpp"

namespace rematkit::param_reader {

// What a value is, as the readers tell values apart. kName: an identifier (float32, nan,
// GatherScatterMode.CLIP); a source that does not tell names from strings gives kName for both.
enum class ValueKind { kNone, kBool, kInt, kFloat, kString, kName, kSequence, kCall, kOther };

// What a reader found wrong, for the source to word or let pass.
enum class Problem {
  kMissing,           // a required param is missing (fatal)
  kDotDims,           // dimension_numbers is not ((lc, rc), (lb, rb)) (fatal)
  kPaddingConfig,     // padding_config is not a sequence
  kPaddingConfigRow,  // one of its rows is not (low, high, interior) (fatal)
  kPaddingPairs,      // a ((low, high), ...) param is not a sequence
  kPaddingPair,       // one of its rows is not (low, high) (fatal)
  kConvDims,          // dimension_numbers is not ConvDimensionNumbers(...)
  kIndexingDims,      // dimension_numbers is not Gather- or ScatterDimensionNumbers(...)
  kUnknownField,      // a keyword call has an argument none of its fields is called
  kMissingField,      // ConvDimensionNumbers lacks a field
  kSelectPrim,        // select_prim is neither ge nor le
  kIndexMode,         // mode is no GatherScatterMode
  kFillValue,         // fill_value is neither a number nor None
  kFftType,           // fft_type is no FftType (fatal)
  kRoundingMethod,    // rounding_method is no RoundingMethod
};

// A keyword call's name and its fields' names, in the order of the typed value's fields.
struct CallFields {
  const char* call;
  std::array<const char*, 5> fields;
  size_t num_fields;
};
// jax/_src/lax/convolution.py: ConvDimensionNumbers; jax/_src/lax/slicing.py: GatherDimensionNumbers,
// ScatterDimensionNumbers.
inline constexpr CallFields kConvDimensionNumbers{"ConvDimensionNumbers", {"lhs_spec", "rhs_spec", "out_spec"}, 3};
inline constexpr CallFields kGatherDimensionNumbers{
    "GatherDimensionNumbers",
    {"offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims", "start_indices_batching_dims"},
    5};
inline constexpr CallFields kScatterDimensionNumbers{
    "ScatterDimensionNumbers",
    {"update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "operand_batching_dims",
     "scatter_indices_batching_dims"},
    5};

// IndexingDims's fields in the order of kGatherDimensionNumbers's and kScatterDimensionNumbers's.
inline std::array<std::vector<int64_t>*, 5> fields_of(IndexingDims& d) {
  return {&d.window_dims, &d.collapsed_dims, &d.index_map, &d.operand_batching_dims, &d.indices_batching_dims};
}

inline bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

template <typename Source>
bool is_text(const Source& s, typename Source::Value v) {
  return s.kind(v) == ValueKind::kName || s.kind(v) == ValueKind::kString;
}

template <typename Source>
typename Source::Value required(const Source& s, std::string_view key) {
  const typename Source::Value v = s.find(key);
  if (!v) s.reject(Problem::kMissing, key, "missing parameter '" + std::string(key) + "'");
  return v;
}

template <typename Source>
std::vector<int64_t> ints_param(const Source& s, std::string_view key) {
  return s.ints(required(s, key), key);
}

// dot_general's dimension_numbers, ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)).
template <typename Source>
DotDims dot_dims(const Source& s) {
  const typename Source::Value v = required(s, "dimension_numbers");
  const auto is_pair = [&](typename Source::Value x) { return s.kind(x) == ValueKind::kSequence && s.size(x) == 2; };
  if (!is_pair(v) || !is_pair(s.item(v, 0)) || !is_pair(s.item(v, 1))) {
    s.reject(Problem::kDotDims, "dimension_numbers",
             "dimension_numbers must be (([lhs_contract], [rhs_contract]), ([lhs_batch], [rhs_batch])), got " +
                 s.describe(v));
    return {};
  }
  const auto ints = [&](size_t i, size_t j) { return s.ints(s.item(s.item(v, i), j), "dimension_numbers"); };
  return DotDims{ints(0, 0), ints(0, 1), ints(1, 0), ints(1, 1)};
}

// A ((a, b, ...), ...) param of rows of `width` integers; `shape` words it for messages.
template <typename Source>
std::vector<std::vector<int64_t>> padding_rows(const Source& s, std::string_view key, size_t width,
                                               const char* shape) {
  const typename Source::Value v = required(s, key);
  const bool triples = width == 3;
  const auto message = [&] { return std::string(key) + " must be " + shape + ", got " + s.describe(v); };
  std::vector<std::vector<int64_t>> rows;
  if (s.kind(v) != ValueKind::kSequence) {
    s.reject(triples ? Problem::kPaddingConfig : Problem::kPaddingPairs, key, message());
    return rows;
  }
  for (size_t i = 0; i < s.size(v); ++i) {
    const typename Source::Value row = s.item(v, i);
    rows.push_back(s.kind(row) == ValueKind::kSequence ? s.ints(row, key) : std::vector<int64_t>{});
    if (rows.back().size() != width) {
      s.reject(triples ? Problem::kPaddingConfigRow : Problem::kPaddingPair, key, message());
      rows.pop_back();
    }
  }
  return rows;
}

// pad's padding_config, ((low, high, interior), ...).
template <typename Source>
std::vector<PaddingDim> padding_config(const Source& s) {
  std::vector<PaddingDim> config;
  for (const std::vector<int64_t>& row : padding_rows(s, "padding_config", 3, "((low, high, interior), ...)"))
    config.push_back(PaddingDim{row[0], row[1], row[2]});
  return config;
}

// A ((low, high), ...) param: conv_general_dilated's and the windows' padding.
template <typename Source>
std::vector<PadPair> padding_pairs(const Source& s, std::string_view key) {
  std::vector<PadPair> pairs;
  for (const std::vector<int64_t>& row : padding_rows(s, key, 2, "((low, high), ...)"))
    pairs.push_back(PadPair{row[0], row[1]});
  return pairs;
}

template <typename Source>
bool is_call(const Source& s, typename Source::Value v, const CallFields& call) {
  return s.kind(v) == ValueKind::kCall && s.text(v) == call.call;
}

// A keyword call's integer arguments into `fields` (one per name of `call`); which it saw.
template <typename Source>
std::array<bool, 5> call_fields(const Source& s, typename Source::Value v, const CallFields& call,
                                const std::array<std::vector<int64_t>*, 5>& fields) {
  std::array<bool, 5> seen{};
  for (size_t i = 0; i < s.size(v); ++i) {
    const typename Source::Value argument = s.item(v, i);
    const std::string_view keyword = s.keyword(argument);
    size_t field = call.num_fields;
    for (size_t f = 0; f < call.num_fields; ++f)
      if (keyword == call.fields[f]) field = f;
    if (field == call.num_fields) {
      const std::string named = keyword.empty() ? s.describe(argument) : std::string(keyword);
      s.reject(Problem::kUnknownField, keyword, std::string(call.call) + " has no field '" + named + "'");
      continue;
    }
    *fields[field] = s.ints(s.argument_value(argument), call.fields[field]);
    seen[field] = true;
  }
  return seen;
}

// conv_general_dilated's dimension_numbers, ConvDimensionNumbers(lhs_spec=.., rhs_spec=.., out_spec=..).
template <typename Source>
ConvDims conv_dims(const Source& s) {
  const typename Source::Value v = required(s, "dimension_numbers");
  ConvDims dims;
  if (!is_call(s, v, kConvDimensionNumbers)) {
    s.reject(Problem::kConvDims, "dimension_numbers",
             "dimension_numbers must be ConvDimensionNumbers(lhs_spec=(..), rhs_spec=(..), out_spec=(..)), got " +
                 s.describe(v));
    return dims;
  }
  const std::array<bool, 5> seen =
      call_fields(s, v, kConvDimensionNumbers, {&dims.lhs_spec, &dims.rhs_spec, &dims.out_spec, nullptr, nullptr});
  for (size_t i = 0; i < kConvDimensionNumbers.num_fields; ++i)
    if (!seen[i])
      s.reject(Problem::kMissingField, kConvDimensionNumbers.fields[i],
               std::string("ConvDimensionNumbers lacks ") + kConvDimensionNumbers.fields[i] + ": " + s.describe(v));
  return dims;
}

// All of conv_general_dilated's params.
template <typename Source>
ConvParams conv_params(const Source& s) {
  ConvParams c;
  c.window_strides = ints_param(s, "window_strides");
  c.padding = padding_pairs(s, "padding");
  c.lhs_dilation = ints_param(s, "lhs_dilation");
  c.rhs_dilation = ints_param(s, "rhs_dilation");
  c.dims = conv_dims(s);
  c.feature_group_count = s.int_param("feature_group_count");
  c.batch_group_count = s.int_param("batch_group_count");
  return c;
}

// A window's params; dilations of 1 where the primitive has none (select_and_scatter_add).
template <typename Source>
WindowParams window_params(const Source& s) {
  WindowParams w;
  w.window_dimensions = ints_param(s, "window_dimensions");
  w.window_strides = ints_param(s, "window_strides");
  w.padding = padding_pairs(s, "padding");
  const std::vector<int64_t> ones(w.window_dimensions.size(), 1);
  w.base_dilation = s.find("base_dilation") ? ints_param(s, "base_dilation") : ones;
  w.window_dilation = s.find("window_dilation") ? ints_param(s, "window_dilation") : ones;
  return w;
}

// select_prim: true for ge (the window's max), false for le (its min).
template <typename Source>
bool selects_max(const Source& s) {
  const std::string name = s.name_param("select_prim");
  if (name == "ge") return true;
  if (name != "le")
    s.reject(Problem::kSelectPrim, "select_prim", "select_prim must be ge or le (a window's max or min), got " + name);
  return false;
}

// gather's (kGatherDimensionNumbers) or scatter-add's (kScatterDimensionNumbers) dimension_numbers.
template <typename Source>
IndexingDims indexing_dims(const Source& s, const CallFields& names) {
  const typename Source::Value v = required(s, "dimension_numbers");
  IndexingDims dims;
  if (!is_call(s, v, names)) {
    s.reject(Problem::kIndexingDims, "dimension_numbers",
             std::string("dimension_numbers must be ") + names.call + "(" + names.fields[0] + "=(..), ...), got " +
                 s.describe(v));
    return dims;
  }
  call_fields(s, v, names, fields_of(dims));
  return dims;
}

// mode: GatherScatterMode.X or its value; a missing mode is FILL_OR_DROP, lax.gather's default.
template <typename Source>
IndexMode index_mode(const Source& s) {
  const typename Source::Value v = s.find("mode");
  if (!v || s.kind(v) == ValueKind::kNone) return IndexMode::kFillOrDrop;
  if (s.kind(v) == ValueKind::kInt && s.integer(v) >= 1 && s.integer(v) <= 3)
    return static_cast<IndexMode>(s.integer(v));
  if (is_text(s, v)) {
    if (ends_with(s.text(v), "PROMISE_IN_BOUNDS")) return IndexMode::kPromiseInBounds;
    if (ends_with(s.text(v), "FILL_OR_DROP")) return IndexMode::kFillOrDrop;
    if (ends_with(s.text(v), "CLIP")) return IndexMode::kClip;
  }
  s.reject(Problem::kIndexMode, "mode",
           "mode " + s.describe(v) + " is not supported (GatherScatterMode.CLIP, FILL_OR_DROP or PROMISE_IN_BOUNDS)");
  return IndexMode::kFillOrDrop;
}

// gather's fill_value: a number (nan, inf and -inf among them), or nullopt for None (the dtype's
// default).
template <typename Source>
std::optional<double> fill_value(const Source& s) {
  const typename Source::Value v = s.find("fill_value");
  if (!v || s.kind(v) == ValueKind::kNone) return std::nullopt;
  if (s.kind(v) == ValueKind::kInt || s.kind(v) == ValueKind::kBool) return static_cast<double>(s.integer(v));
  if (s.kind(v) == ValueKind::kFloat) return s.number(v);
  if (s.kind(v) == ValueKind::kName) {
    if (s.text(v) == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s.text(v) == "inf") return std::numeric_limits<double>::infinity();
    if (s.text(v) == "-inf") return -std::numeric_limits<double>::infinity();
  }
  s.reject(Problem::kFillValue, "fill_value", "fill_value must be a number or None, got " + s.describe(v));
  return std::nullopt;
}

// fft's fft_type: FftType.FFT ... IRFFT, or its value 0-3 (jax/_src/lax/fft.py).
template <typename Source>
FftKind fft_kind(const Source& s) {
  const typename Source::Value v = required(s, "fft_type");
  int code = -1;
  if (s.kind(v) == ValueKind::kInt)
    code = s.integer(v) >= 0 && s.integer(v) <= 3 ? static_cast<int>(s.integer(v)) : -1;
  else if (is_text(s, v))
    code = fft_kind_code(s.text(v));
  if (code < 0)
    s.reject(Problem::kFftType, "fft_type",
             "fft_type must be FftType.FFT, IFFT, RFFT or IRFFT (or 0-3), got " + s.describe(v));
  return static_cast<FftKind>(code);
}

// round's rounding_method: RoundingMethod.TO_NEAREST_EVEN (1, what jnp.round prints) or
// AWAY_FROM_ZERO (0, lax.round's default, also when the param is missing).
template <typename Source>
bool rounds_to_nearest_even(const Source& s) {
  const typename Source::Value v = s.find("rounding_method");
  if (!v) return false;
  if (s.kind(v) == ValueKind::kInt && (s.integer(v) == 0 || s.integer(v) == 1)) return s.integer(v) == 1;
  if (is_text(s, v)) {
    if (ends_with(s.text(v), "TO_NEAREST_EVEN")) return true;
    if (ends_with(s.text(v), "AWAY_FROM_ZERO")) return false;
  }
  s.reject(Problem::kRoundingMethod, "rounding_method",
           "rounding_method must be 0 or 1 (RoundingMethod.AWAY_FROM_ZERO or TO_NEAREST_EVEN), got " +
               s.describe(v));
  return false;
}

}  // namespace rematkit::param_reader
