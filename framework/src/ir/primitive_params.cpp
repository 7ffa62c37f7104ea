#include "rematkit/ir/primitive_params.hpp"

#include <cmath>

namespace rematkit {
namespace {

Params one(const char* key, ParamValue value) {
  Params p;
  p.set(key, std::move(value));
  return p;
}

ParamValue list_of(const std::vector<int64_t>& values) {
  ParamValue v = ParamValue::of_ints(values);
  v.kind = ParamValue::Kind::kList;
  return v;
}

const ParamSpec* find_spec(Prim prim, const std::string& key) {
  const PrimInfo& info = prim_info(prim);
  for (size_t i = 0; i < info.num_params; ++i)
    if (info.params[i].name == key) return &info.params[i];
  return nullptr;
}

}  // namespace

Params dot_general_params(const DotDims& d, std::optional<DType> preferred_element_type) {
  // As JAX prints them: (([1], [0]), ([], [])).
  Params p = one("dimension_numbers",
                 ParamValue::of_tuple({ParamValue::of_tuple({list_of(d.lhs_contract), list_of(d.rhs_contract)}),
                                       ParamValue::of_tuple({list_of(d.lhs_batch), list_of(d.rhs_batch)})}));
  if (preferred_element_type)
    p.set("preferred_element_type", ParamValue::of_ident(std::string(dtype_numpy_name(*preferred_element_type))));
  return p;
}

Params reduce_params(const std::vector<int64_t>& axes) { return one("axes", ParamValue::of_ints(axes)); }

Params psum_params(const std::vector<std::string>& axes) {
  std::vector<ParamValue> names;
  for (const std::string& a : axes) names.push_back(ParamValue::of_string(a));
  Params p = one("axes", ParamValue::of_tuple(std::move(names)));
  p.set("axis_index_groups", ParamValue::none());
  return p;
}

Params broadcast_in_dim_params(const Shape& shape, const std::vector<int64_t>& broadcast_dimensions) {
  Params p = one("shape", ParamValue::of_ints(shape));
  p.set("broadcast_dimensions", ParamValue::of_ints(broadcast_dimensions));
  return p;
}

Params reshape_params(const Shape& new_sizes) {
  Params p = one("new_sizes", ParamValue::of_ints(new_sizes));
  p.set("dimensions", ParamValue::none());
  return p;
}

Params transpose_params(const std::vector<int64_t>& permutation) {
  return one("permutation", ParamValue::of_ints(permutation));
}

Params integer_pow_params(int64_t y) { return one("y", ParamValue::of_int(y)); }

Params convert_element_type_params(DType new_dtype) {
  return one("new_dtype", ParamValue::of_ident(std::string(dtype_numpy_name(new_dtype))));
}

Params softmax_params(int64_t axis) { return one("axis", ParamValue::of_int(axis)); }

Params concatenate_params(int64_t dimension) { return one("dimension", ParamValue::of_int(dimension)); }

Params slice_params(const Shape& start_indices, const Shape& limit_indices, const std::vector<int64_t>& strides) {
  Params p = one("start_indices", ParamValue::of_ints(start_indices));
  p.set("limit_indices", ParamValue::of_ints(limit_indices));
  p.set("strides", strides.empty() ? ParamValue::none() : ParamValue::of_ints(strides));
  return p;
}

Params dynamic_slice_params(const Shape& slice_sizes) { return one("slice_sizes", ParamValue::of_ints(slice_sizes)); }

Params pad_params(const std::vector<PaddingDim>& padding_config) {
  std::vector<ParamValue> dims;
  for (const PaddingDim& d : padding_config) dims.push_back(ParamValue::of_ints({d.low, d.high, d.interior}));
  return one("padding_config", ParamValue::of_tuple(std::move(dims)));
}

Params rev_params(const std::vector<int64_t>& dimensions) { return one("dimensions", ParamValue::of_ints(dimensions)); }

Params cumsum_params(int64_t axis, bool reverse) {
  Params p = one("axis", ParamValue::of_int(axis));
  p.set("reverse", ParamValue::of_bool(reverse));
  return p;
}

namespace {

// The keyword names of each field of IndexingDims, for gather and for scatter.
struct IndexingNames {
  const char* call;
  const char* fields[5];
};
constexpr IndexingNames kGatherNames{"GatherDimensionNumbers",
                                     {"offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
                                      "start_indices_batching_dims"}};
constexpr IndexingNames kScatterNames{"ScatterDimensionNumbers",
                                      {"update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                                       "operand_batching_dims", "scatter_indices_batching_dims"}};

std::vector<int64_t>* indexing_field(IndexingDims& d, int i) {
  std::vector<int64_t>* fields[5] = {&d.window_dims, &d.collapsed_dims, &d.index_map, &d.operand_batching_dims,
                                     &d.indices_batching_dims};
  return fields[i];
}

ParamValue indexing_value(const IndexingDims& dims, const IndexingNames& names) {
  ParamValue call;
  call.kind = ParamValue::Kind::kCall;
  call.text = names.call;
  IndexingDims copy = dims;
  for (int i = 0; i < 5; ++i) {
    ParamValue keyword;
    keyword.kind = ParamValue::Kind::kKeyword;
    keyword.text = names.fields[i];
    keyword.items.push_back(ParamValue::of_ints(*indexing_field(copy, i)));
    call.items.push_back(std::move(keyword));
  }
  return call;
}

ParamValue mode_value(IndexMode mode) {
  switch (mode) {
    case IndexMode::kClip: return ParamValue::of_ident("GatherScatterMode.CLIP");
    case IndexMode::kFillOrDrop: return ParamValue::of_ident("GatherScatterMode.FILL_OR_DROP");
    case IndexMode::kPromiseInBounds: return ParamValue::of_ident("GatherScatterMode.PROMISE_IN_BOUNDS");
  }
  return ParamValue::none();
}

}  // namespace

Params gather_params(const IndexingDims& dims, const Shape& slice_sizes, IndexMode mode, std::optional<double> fill,
                     bool wrap_negative_indices) {
  Params p = one("dimension_numbers", indexing_value(dims, kGatherNames));
  p.set("slice_sizes", ParamValue::of_ints(slice_sizes));
  p.set("mode", mode_value(mode));
  ParamValue fill_param = ParamValue::none();
  if (fill) {
    fill_param.kind = ParamValue::Kind::kFloat;
    fill_param.number = *fill;
  }
  p.set("fill_value", fill_param);
  if (wrap_negative_indices) p.set("wrap_negative_indices", ParamValue::of_bool(true));
  return p;
}

Params scatter_add_params(const IndexingDims& dims, IndexMode mode, bool wrap_negative_indices) {
  Params p = one("dimension_numbers", indexing_value(dims, kScatterNames));
  p.set("mode", mode_value(mode));
  if (wrap_negative_indices) p.set("wrap_negative_indices", ParamValue::of_bool(true));
  return p;
}

namespace {

constexpr const char* kConvFields[3] = {"lhs_spec", "rhs_spec", "out_spec"};

ParamValue pairs_value(const std::vector<PadPair>& pairs) {
  std::vector<ParamValue> items;
  for (const PadPair& p : pairs) items.push_back(ParamValue::of_ints({p.low, p.high}));
  return ParamValue::of_tuple(std::move(items));
}

// The window's five params, in the order JAX prints them (select_prim goes between padding and
// window_dilation).
void set_window(Params& p, const WindowParams& w, const char* select, bool dilations) {
  if (dilations) p.set("base_dilation", ParamValue::of_ints(w.base_dilation));
  p.set("padding", pairs_value(w.padding));
  if (select) p.set("select_prim", ParamValue::of_ident(select));
  if (dilations) p.set("window_dilation", ParamValue::of_ints(w.window_dilation));
  p.set("window_dimensions", ParamValue::of_ints(w.window_dimensions));
  p.set("window_strides", ParamValue::of_ints(w.window_strides));
}

const char* select_name(Prim select_prim) {
  if (select_prim != Prim::kGe && select_prim != Prim::kLe) internal_error("select_prim must be ge or le");
  return select_prim == Prim::kGe ? "ge" : "le";
}

}  // namespace

Params conv_general_dilated_params(const ConvParams& c, std::optional<DType> preferred_element_type) {
  ParamValue dims;
  dims.kind = ParamValue::Kind::kCall;
  dims.text = "ConvDimensionNumbers";
  for (const auto* spec : {&c.dims.lhs_spec, &c.dims.rhs_spec, &c.dims.out_spec}) {
    ParamValue keyword;
    keyword.kind = ParamValue::Kind::kKeyword;
    keyword.text = kConvFields[dims.items.size()];
    keyword.items.push_back(ParamValue::of_ints(*spec));
    dims.items.push_back(std::move(keyword));
  }
  Params p = one("batch_group_count", ParamValue::of_int(c.batch_group_count));
  p.set("dimension_numbers", std::move(dims));
  p.set("feature_group_count", ParamValue::of_int(c.feature_group_count));
  p.set("lhs_dilation", ParamValue::of_ints(c.lhs_dilation));
  p.set("padding", pairs_value(c.padding));
  p.set("precision", ParamValue::none());
  p.set("preferred_element_type", preferred_element_type
                                      ? ParamValue::of_ident(std::string(dtype_numpy_name(*preferred_element_type)))
                                      : ParamValue::none());
  p.set("rhs_dilation", ParamValue::of_ints(c.rhs_dilation));
  p.set("window_strides", ParamValue::of_ints(c.window_strides));
  return p;
}

Params reduce_window_params(const WindowParams& window) {
  Params p;
  set_window(p, window, nullptr, true);
  return p;
}

Params select_and_gather_add_params(Prim select_prim, const WindowParams& window) {
  Params p;
  set_window(p, window, select_name(select_prim), true);
  return p;
}

Params select_and_scatter_add_params(Prim select_prim, const WindowParams& window) {
  Params p;
  set_window(p, window, select_name(select_prim), false);
  return p;
}

std::vector<PadPair> padding_pairs(const Params& p, const std::string& key, const SourceLocation& where) {
  const ParamValue* v = p.find(key);
  if (!v) fail_at(where, "missing parameter '" + key + "'");
  auto bad = [&]() { fail_at(where, key + " must be ((low, high), ...), got " + v->str()); };
  if (!v->is_sequence()) bad();
  std::vector<PadPair> pairs;
  for (const ParamValue& dim : v->items) {
    const std::vector<int64_t> pair = dim.is_sequence() ? ints_of(dim, key, where) : std::vector<int64_t>{};
    if (pair.size() != 2) bad();
    pairs.push_back(PadPair{pair[0], pair[1]});
  }
  return pairs;
}

ConvDims conv_dims(const Params& p, const SourceLocation& where) {
  const ParamValue* v = p.find("dimension_numbers");
  if (!v) fail_at(where, "missing parameter 'dimension_numbers'");
  if (v->kind != ParamValue::Kind::kCall || v->text != "ConvDimensionNumbers")
    fail_at(where, "dimension_numbers must be ConvDimensionNumbers(lhs_spec=(..), rhs_spec=(..), out_spec=(..)), got " +
                       v->str());
  ConvDims dims;
  std::vector<int64_t>* fields[3] = {&dims.lhs_spec, &dims.rhs_spec, &dims.out_spec};
  bool seen[3] = {false, false, false};
  for (const ParamValue& item : v->items) {
    int field = -1;
    for (int i = 0; i < 3; ++i)
      if (item.kind == ParamValue::Kind::kKeyword && item.text == kConvFields[i]) field = i;
    if (field < 0)
      fail_at(where, "ConvDimensionNumbers has no field '" + (item.kind == ParamValue::Kind::kKeyword ? item.text : item.str()) + "'");
    *fields[field] = ints_of(item.items.at(0), kConvFields[field], where);
    seen[field] = true;
  }
  for (int i = 0; i < 3; ++i)
    if (!seen[i]) fail_at(where, std::string("ConvDimensionNumbers lacks ") + kConvFields[i] + ": " + v->str());
  return dims;
}

ConvParams conv_params(const Params& p, const SourceLocation& where) {
  ConvParams c;
  c.window_strides = param_ints(p, "window_strides", where);
  c.padding = padding_pairs(p, "padding", where);
  c.lhs_dilation = param_ints(p, "lhs_dilation", where);
  c.rhs_dilation = param_ints(p, "rhs_dilation", where);
  c.dims = conv_dims(p, where);
  c.feature_group_count = param_int(p, "feature_group_count", where);
  c.batch_group_count = param_int(p, "batch_group_count", where);
  return c;
}

WindowParams window_params(const Params& p, const SourceLocation& where) {
  WindowParams w;
  w.window_dimensions = param_ints(p, "window_dimensions", where);
  w.window_strides = param_ints(p, "window_strides", where);
  w.padding = padding_pairs(p, "padding", where);
  const std::vector<int64_t> ones(w.window_dimensions.size(), 1);
  w.base_dilation = p.find("base_dilation") ? param_ints(p, "base_dilation", where) : ones;
  w.window_dilation = p.find("window_dilation") ? param_ints(p, "window_dilation", where) : ones;
  return w;
}

Prim select_prim(const Params& p, const SourceLocation& where) {
  const std::string name = param_name(p, "select_prim", where);
  if (name == "ge") return Prim::kGe;
  if (name == "le") return Prim::kLe;
  fail_at(where, "select_prim must be ge or le (a window's max or min), got " + name);
}

IndexingDims indexing_dims(Prim prim, const Params& p, const SourceLocation& where) {
  const IndexingNames& names = prim == Prim::kScatterAdd ? kScatterNames : kGatherNames;
  const ParamValue* v = p.find("dimension_numbers");
  if (!v) fail_at(where, "missing parameter 'dimension_numbers'");
  if (v->kind != ParamValue::Kind::kCall || v->text != names.call)
    fail_at(where, std::string("dimension_numbers must be ") + names.call + "(" + names.fields[0] + "=(..), ...), got " +
                       v->str());
  IndexingDims dims;
  for (const ParamValue& item : v->items) {
    int field = -1;
    for (int i = 0; i < 5; ++i)
      if (item.kind == ParamValue::Kind::kKeyword && item.text == names.fields[i]) field = i;
    if (field < 0)
      fail_at(where, std::string(names.call) + " has no field '" + (item.kind == ParamValue::Kind::kKeyword ? item.text : item.str()) + "'");
    *indexing_field(dims, field) = ints_of(item.items.at(0), names.fields[field], where);
  }
  return dims;
}

IndexMode index_mode(const Params& p, const SourceLocation& where) {
  const ParamValue* v = p.find("mode");
  if (!v || v->kind == ParamValue::Kind::kNone) return IndexMode::kFillOrDrop;
  if (v->kind == ParamValue::Kind::kInt && v->integer >= 1 && v->integer <= 3) return static_cast<IndexMode>(v->integer);
  const std::string& t = v->text;
  auto named = [&](std::string_view mode) {
    return (v->kind == ParamValue::Kind::kIdent || v->kind == ParamValue::Kind::kString) && t.size() >= mode.size() &&
           t.compare(t.size() - mode.size(), mode.size(), mode) == 0;
  };
  if (named("PROMISE_IN_BOUNDS")) return IndexMode::kPromiseInBounds;
  if (named("FILL_OR_DROP")) return IndexMode::kFillOrDrop;
  if (named("CLIP")) return IndexMode::kClip;
  fail_at(where, "mode " + v->str() + " is not supported (GatherScatterMode.CLIP, FILL_OR_DROP or PROMISE_IN_BOUNDS)");
}

std::optional<double> fill_value(const Params& p, const SourceLocation& where) {
  const ParamValue* v = p.find("fill_value");
  if (!v || v->kind == ParamValue::Kind::kNone) return std::nullopt;
  if (v->kind == ParamValue::Kind::kInt) return static_cast<double>(v->integer);
  if (v->kind == ParamValue::Kind::kFloat) return v->number;
  if (v->kind == ParamValue::Kind::kBool) return v->boolean ? 1.0 : 0.0;
  if (v->kind == ParamValue::Kind::kIdent && (v->text == "nan" || v->text == "inf" || v->text == "-inf"))
    return v->text == "nan" ? NAN : v->text == "inf" ? INFINITY : -INFINITY;
  fail_at(where, "fill_value must be a number or None, got " + v->str());
}

FftKind fft_kind(const Params& p, const SourceLocation& where) {
  const ParamValue* v = p.find("fft_type");
  if (!v) fail_at(where, "missing parameter 'fft_type'");
  int code = -1;
  if (v->kind == ParamValue::Kind::kInt) code = v->integer >= 0 && v->integer <= 3 ? static_cast<int>(v->integer) : -1;
  else if (v->kind == ParamValue::Kind::kIdent || v->kind == ParamValue::Kind::kString) code = fft_kind_code(v->text);
  if (code < 0) fail_at(where, "fft_type must be FftType.FFT, IFFT, RFFT or IRFFT (or 0-3), got " + v->str());
  return static_cast<FftKind>(code);
}

Params fft_params(FftKind kind, const Shape& fft_lengths) {
  Params p;
  p.set("fft_lengths", ParamValue::of_ints(fft_lengths));
  p.set("fft_type", ParamValue::of_int(static_cast<int64_t>(kind)));
  return p;
}

std::vector<PaddingDim> padding_config(const Params& p, const SourceLocation& where) {
  const ParamValue* v = p.find("padding_config");
  if (!v) fail_at(where, "missing parameter 'padding_config'");
  auto bad = [&]() { fail_at(where, "padding_config must be ((low, high, interior), ...), got " + v->str()); };
  if (!v->is_sequence()) bad();
  std::vector<PaddingDim> config;
  for (const ParamValue& dim : v->items) {
    const std::vector<int64_t> triple = dim.is_sequence() ? ints_of(dim, "padding_config", where) : std::vector<int64_t>{};
    if (triple.size() != 3) bad();
    config.push_back(PaddingDim{triple[0], triple[1], triple[2]});
  }
  return config;
}

DotDims dot_dims(const Params& p, const SourceLocation& where) {
  const ParamValue* v = p.find("dimension_numbers");
  if (!v) fail_at(where, "missing parameter 'dimension_numbers'");
  auto bad = [&]() {
    fail_at(where, "dimension_numbers must be (([lhs_contract], [rhs_contract]), ([lhs_batch], [rhs_batch])), got " +
                       v->str());
  };
  if (!v->is_sequence() || v->items.size() != 2) bad();
  for (const ParamValue& pair : v->items)
    if (!pair.is_sequence() || pair.items.size() != 2) bad();
  const auto ints = [&](const ParamValue& item) { return ints_of(item, "dimension_numbers", where); };
  return DotDims{ints(v->items[0].items[0]), ints(v->items[0].items[1]), ints(v->items[1].items[0]),
                 ints(v->items[1].items[1])};
}

DType dtype_param(const Params& p, const std::string& key, const SourceLocation& where) {
  const ParamValue* v = p.find(key);
  if (!v) fail_at(where, "missing parameter '" + key + "'");
  const auto dtype = (v->kind == ParamValue::Kind::kIdent || v->kind == ParamValue::Kind::kString)
                         ? parse_dtype(v->text)
                         : std::nullopt;
  if (!dtype) fail_at(where, "unsupported dtype '" + v->str() + "' (" + std::string(kSupportedDtypes) + ")");
  return *dtype;
}

std::optional<DType> optional_dtype_param(const Params& p, const std::string& key, const SourceLocation& where) {
  const ParamValue* v = p.find(key);
  if (!v || v->kind == ParamValue::Kind::kNone) return std::nullopt;
  return dtype_param(p, key, where);
}

bool rounds_to_nearest_even(const Params& p, const SourceLocation& where) {
  const ParamValue* v = p.find("rounding_method");
  if (!v) return false;
  if (v->kind == ParamValue::Kind::kInt && (v->integer == 0 || v->integer == 1)) return v->integer == 1;
  const auto ends_with = [&](std::string_view suffix) {
    return v->text.size() >= suffix.size() && v->text.compare(v->text.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (v->kind == ParamValue::Kind::kIdent || v->kind == ParamValue::Kind::kString) {
    if (ends_with("TO_NEAREST_EVEN")) return true;
    if (ends_with("AWAY_FROM_ZERO")) return false;
  }
  fail_at(where, "rounding_method must be 0 or 1 (RoundingMethod.AWAY_FROM_ZERO or TO_NEAREST_EVEN), got " + v->str());
}

void check_params(Prim prim, const Params& params, const SourceLocation& where) {
  const PrimInfo& info = prim_info(prim);
  for (size_t i = 0; i < info.num_params; ++i) {
    const ParamSpec& spec = info.params[i];
    const std::string key(spec.name);
    const ParamValue* value = params.find(key);
    if (!value) {
      if (spec.required) fail_at(where, "missing parameter '" + key + "'");
      continue;
    }
    switch (spec.kind) {
      case ParamKind::kInt: param_int(params, key, where); break;
      case ParamKind::kInts: param_ints(params, key, where); break;
      case ParamKind::kIntsOrNone: param_ints_or_none(params, key, where); break;
      case ParamKind::kBool: param_bool(params, key, where); break;
      case ParamKind::kPadding: padding_config(params, where); break;
      case ParamKind::kPaddingPairs: padding_pairs(params, key, where); break;
      case ParamKind::kConvDims: conv_dims(params, where); break;
      case ParamKind::kDType:
        if (spec.required || value->kind != ParamValue::Kind::kNone) dtype_param(params, key, where);
        break;
      case ParamKind::kName: param_name(params, key, where); break;
      case ParamKind::kDotDims: dot_dims(params, where); break;
      case ParamKind::kGatherDims: case ParamKind::kScatterDims: indexing_dims(prim, params, where); break;
      case ParamKind::kIndexMode: index_mode(params, where); break;
      case ParamKind::kProgram:
        if (value->kind != ParamValue::Kind::kProgram)
          fail_at(where, std::string(info.name) + ": " + key + " must be a sub-program, got " + value->str());
        break;
      case ParamKind::kPrograms: {
        bool programs = value->kind == ParamValue::Kind::kProgram || (value->is_sequence() && !value->items.empty());
        for (const ParamValue& item : value->items) programs &= item.kind == ParamValue::Kind::kProgram;
        if (!programs) fail_at(where, std::string(info.name) + ": " + key + " must be sub-programs, got " + value->str());
        break;
      }
      case ParamKind::kAny: case ParamKind::kRaw: break;
    }
  }
}

Params schema_params(Prim prim, Params params) {
  Params kept;
  for (auto& [key, value] : params.entries)
    if (find_spec(prim, key)) kept.entries.emplace_back(key, std::move(value));
  return kept;
}

}  // namespace rematkit
