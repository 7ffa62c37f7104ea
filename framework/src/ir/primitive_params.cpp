#include "rematkit/ir/primitive_params.hpp"

#include <string_view>

#include "rematkit/plugin/param_reader.hpp"

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

ParamValue indexing_value(const IndexingDims& dims, const param_reader::CallFields& names) {
  ParamValue call;
  call.kind = ParamValue::Kind::kCall;
  call.text = names.call;
  IndexingDims copy = dims;
  for (size_t i = 0; i < names.num_fields; ++i) {
    ParamValue keyword;
    keyword.kind = ParamValue::Kind::kKeyword;
    keyword.text = names.fields[i];
    keyword.items.push_back(ParamValue::of_ints(*param_reader::fields_of(copy)[i]));
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
  Params p = one("dimension_numbers", indexing_value(dims, param_reader::kGatherDimensionNumbers));
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
  Params p = one("dimension_numbers", indexing_value(dims, param_reader::kScatterDimensionNumbers));
  p.set("mode", mode_value(mode));
  if (wrap_negative_indices) p.set("wrap_negative_indices", ParamValue::of_bool(true));
  return p;
}

namespace {

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
  dims.text = param_reader::kConvDimensionNumbers.call;
  for (const auto* spec : {&c.dims.lhs_spec, &c.dims.rhs_spec, &c.dims.out_spec}) {
    ParamValue keyword;
    keyword.kind = ParamValue::Kind::kKeyword;
    keyword.text = param_reader::kConvDimensionNumbers.fields[dims.items.size()];
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

namespace {

// The core's params as a param source (rematkit/plugin/param_reader.hpp): every problem is a
// bad-input error at `where`, worded by the reader.
class ParamsSource {
 public:
  using Value = const ParamValue*;
  ParamsSource(const Params& params, const SourceLocation& where) : params_(params), where_(where) {}

  Value find(std::string_view key) const { return params_.find(std::string(key)); }
  param_reader::ValueKind kind(Value v) const {
    using K = param_reader::ValueKind;
    switch (v->kind) {
      case ParamValue::Kind::kNone: return K::kNone;
      case ParamValue::Kind::kBool: return K::kBool;
      case ParamValue::Kind::kInt: return K::kInt;
      case ParamValue::Kind::kFloat: return K::kFloat;
      case ParamValue::Kind::kString: return K::kString;
      case ParamValue::Kind::kIdent: return K::kName;
      case ParamValue::Kind::kTuple: case ParamValue::Kind::kList: case ParamValue::Kind::kSet: return K::kSequence;
      case ParamValue::Kind::kCall: return K::kCall;
      case ParamValue::Kind::kKeyword: case ParamValue::Kind::kFunction: case ParamValue::Kind::kProgram: break;
    }
    return K::kOther;
  }
  int64_t integer(Value v) const { return v->kind == ParamValue::Kind::kBool ? (v->boolean ? 1 : 0) : v->integer; }
  double number(Value v) const { return v->number; }
  std::string_view text(Value v) const { return v->text; }
  size_t size(Value v) const { return v->items.size(); }
  Value item(Value v, size_t i) const { return &v->items[i]; }
  std::string_view keyword(Value argument) const {
    return argument->kind == ParamValue::Kind::kKeyword ? std::string_view(argument->text) : std::string_view();
  }
  Value argument_value(Value argument) const { return &argument->items.at(0); }
  std::string describe(Value v) const { return v->str(); }
  std::vector<int64_t> ints(Value v, std::string_view key) const { return ints_of(*v, std::string(key), where_); }
  int64_t int_param(std::string_view key) const { return param_int(params_, std::string(key), where_); }
  std::string name_param(std::string_view key) const { return param_name(params_, std::string(key), where_); }
  [[noreturn]] void reject(param_reader::Problem, std::string_view, const std::string& message) const {
    fail_at(where_, message);
  }

 private:
  const Params& params_;
  const SourceLocation& where_;
};

}  // namespace

std::vector<PadPair> padding_pairs(const Params& p, const std::string& key, const SourceLocation& where) {
  return param_reader::padding_pairs(ParamsSource(p, where), key);
}

ConvDims conv_dims(const Params& p, const SourceLocation& where) {
  return param_reader::conv_dims(ParamsSource(p, where));
}

ConvParams conv_params(const Params& p, const SourceLocation& where) {
  return param_reader::conv_params(ParamsSource(p, where));
}

WindowParams window_params(const Params& p, const SourceLocation& where) {
  return param_reader::window_params(ParamsSource(p, where));
}

Prim select_prim(const Params& p, const SourceLocation& where) {
  return param_reader::selects_max(ParamsSource(p, where)) ? Prim::kGe : Prim::kLe;
}

IndexingDims indexing_dims(Prim prim, const Params& p, const SourceLocation& where) {
  return param_reader::indexing_dims(ParamsSource(p, where), prim == Prim::kScatterAdd
                                                                 ? param_reader::kScatterDimensionNumbers
                                                                 : param_reader::kGatherDimensionNumbers);
}

IndexMode index_mode(const Params& p, const SourceLocation& where) {
  return param_reader::index_mode(ParamsSource(p, where));
}

std::optional<double> fill_value(const Params& p, const SourceLocation& where) {
  return param_reader::fill_value(ParamsSource(p, where));
}

FftKind fft_kind(const Params& p, const SourceLocation& where) {
  return param_reader::fft_kind(ParamsSource(p, where));
}

Params fft_params(FftKind kind, const Shape& fft_lengths) {
  Params p;
  p.set("fft_lengths", ParamValue::of_ints(fft_lengths));
  p.set("fft_type", ParamValue::of_int(static_cast<int64_t>(kind)));
  return p;
}

std::vector<PaddingDim> padding_config(const Params& p, const SourceLocation& where) {
  return param_reader::padding_config(ParamsSource(p, where));
}

DotDims dot_dims(const Params& p, const SourceLocation& where) {
  return param_reader::dot_dims(ParamsSource(p, where));
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
  return param_reader::rounds_to_nearest_even(ParamsSource(p, where));
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
