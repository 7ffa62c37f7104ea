// The structured param readers (rematkit/plugin/param_reader.hpp) read the same params alike through
// the core's Params (primitive_params.hpp) and through the rk_equation_view a plugin sees
// (plugin.hpp), and each side keeps its own errors.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace rematkit {
namespace {

// An equation's params as the host passes them to a plugin: framework/src/plugin/c_values.cpp's
// CValues::params (internal to the core's library), for params with no policy in them.
class HostView {
 public:
  HostView(const char* primitive, const Params& params) {
    for (const auto& [key, value] : params.entries) {
      rk_value v = convert(value);
      v.name = keep(key);
      params_.push_back(v);
    }
    view_.struct_size = sizeof(rk_equation_view);
    view_.primitive = primitive;
    view_.params = params_.data();
    view_.num_params = params_.size();
  }
  const rk_equation_view* get() const { return &view_; }

 private:
  static rk_value empty(rk_value_kind kind) {
    rk_value v{};
    v.struct_size = sizeof(rk_value);
    v.kind = kind;
    return v;
  }
  const char* keep(std::string s) { return strings_.emplace_back(std::move(s)).c_str(); }
  rk_value convert(const ParamValue& v) {
    using Kind = ParamValue::Kind;
    rk_value out = empty(RK_VALUE_NONE);
    switch (v.kind) {
      case Kind::kNone: return out;
      case Kind::kBool: out = empty(RK_VALUE_BOOL); out.int_value = v.boolean ? 1 : 0; return out;
      case Kind::kInt: out = empty(RK_VALUE_INT); out.int_value = v.integer; return out;
      case Kind::kFloat: out = empty(RK_VALUE_FLOAT); out.float_value = v.number; return out;
      case Kind::kString: case Kind::kIdent: case Kind::kFunction: case Kind::kProgram:
        out = empty(RK_VALUE_STRING);
        out.string_value = keep(v.kind == Kind::kProgram ? "<jaxpr>" : v.text);
        return out;
      case Kind::kKeyword: out = convert(v.items.at(0)); out.name = keep(v.text); return out;
      case Kind::kCall: out = convert(ParamValue::of_tuple(v.items)); out.string_value = keep(v.text); return out;
      case Kind::kTuple: case Kind::kList: case Kind::kSet: {
        std::vector<rk_value> items;
        for (const ParamValue& item : v.items) items.push_back(convert(item));
        const std::vector<rk_value>& kept = lists_.emplace_back(std::move(items));
        out = empty(RK_VALUE_LIST);
        out.items = kept.data();
        out.num_items = kept.size();
        return out;
      }
    }
    return out;
  }

  std::deque<std::string> strings_;
  std::deque<std::vector<rk_value>> lists_;
  std::vector<rk_value> params_;
  rk_equation_view view_{};
};

const SourceLocation kWhere{"test.jaxpr", 1, 1};

TEST(ParamReader, DotDimsAndPaddingConfigReadAlike) {
  for (const DotDims& dims : {DotDims{{1}, {0}, {}, {}}, DotDims{{2}, {1}, {0}, {0}}, DotDims{{}, {}, {0, 1}, {0, 1}}}) {
    const Params params = dot_general_params(dims, DType::kF32);
    EXPECT_EQ(dot_dims(params, kWhere), dims);
    EXPECT_EQ(plugin::dot_dims(HostView("dot_general", params).get()), dims);
  }
  const std::vector<PaddingDim> config{{1, 2, 0}, {-1, 0, 3}};
  const Params params = pad_params(config);
  EXPECT_EQ(padding_config(params, kWhere), config);
  EXPECT_EQ(plugin::padding_config(HostView("pad", params).get()), config);
}

TEST(ParamReader, ConvolutionReadsAlike) {
  ConvParams conv;
  conv.window_strides = {2, 1};
  conv.padding = {{1, 1}, {0, 2}};
  conv.lhs_dilation = {1, 2};
  conv.rhs_dilation = {3, 1};
  conv.dims = ConvDims{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}};
  conv.feature_group_count = 2;
  conv.batch_group_count = 1;
  const Params params = conv_general_dilated_params(conv);
  const HostView view("conv_general_dilated", params);
  for (const ConvParams& read : {conv_params(params, kWhere), plugin::conv_params(view.get())}) {
    EXPECT_EQ(read.window_strides, conv.window_strides);
    EXPECT_EQ(read.padding, conv.padding);
    EXPECT_EQ(read.lhs_dilation, conv.lhs_dilation);
    EXPECT_EQ(read.rhs_dilation, conv.rhs_dilation);
    EXPECT_EQ(read.dims, conv.dims);
    EXPECT_EQ(read.feature_group_count, conv.feature_group_count);
    EXPECT_EQ(read.batch_group_count, conv.batch_group_count);
  }
  EXPECT_EQ(plugin::padding_pairs(view.get(), "padding"), padding_pairs(params, "padding", kWhere));
}

void expect_window(const WindowParams& read, const WindowParams& window, bool dilations) {
  const std::vector<int64_t> ones(window.window_dimensions.size(), 1);
  EXPECT_EQ(read.window_dimensions, window.window_dimensions);
  EXPECT_EQ(read.window_strides, window.window_strides);
  EXPECT_EQ(read.padding, window.padding);
  EXPECT_EQ(read.base_dilation, dilations ? window.base_dilation : ones);
  EXPECT_EQ(read.window_dilation, dilations ? window.window_dilation : ones);
}

TEST(ParamReader, WindowsAndSelectPrimReadAlike) {
  const WindowParams window{{1, 3, 3}, {1, 2, 2}, {{0, 0}, {1, 1}, {0, 1}}, {1, 1, 2}, {1, 2, 1}};
  const Params reduce = reduce_window_params(window);
  expect_window(window_params(reduce, kWhere), window, true);
  expect_window(plugin::window_params(HostView("reduce_window_max", reduce).get()), window, true);
  for (const Prim select : {Prim::kGe, Prim::kLe}) {
    const Params gather_add = select_and_gather_add_params(select, window);
    const HostView gather_view("select_and_gather_add", gather_add);
    expect_window(plugin::window_params(gather_view.get()), window, true);
    EXPECT_EQ(select_prim(gather_add, kWhere), select);
    EXPECT_EQ(plugin::selects_max(gather_view.get()), select == Prim::kGe);

    const Params scatter_add = select_and_scatter_add_params(select, window);
    const HostView scatter_view("select_and_scatter_add", scatter_add);
    expect_window(window_params(scatter_add, kWhere), window, false);
    expect_window(plugin::window_params(scatter_view.get()), window, false);
    EXPECT_EQ(plugin::selects_max(scatter_view.get()), select_prim(scatter_add, kWhere) == Prim::kGe);
  }
}

TEST(ParamReader, GatherAndScatterReadAlike) {
  const IndexingDims dims{{1}, {0}, {0}, {2}, {1}};
  for (const IndexMode mode : {IndexMode::kClip, IndexMode::kFillOrDrop, IndexMode::kPromiseInBounds}) {
    const Params gather = gather_params(dims, {1, 4, 2}, mode, 0.5);
    const HostView gather_view("gather", gather);
    EXPECT_EQ(indexing_dims(Prim::kGather, gather, kWhere), dims);
    EXPECT_EQ(plugin::indexing_dims(gather_view.get()), dims);
    EXPECT_EQ(index_mode(gather, kWhere), mode);
    EXPECT_EQ(plugin::index_mode(gather_view.get()), mode);
    EXPECT_EQ(fill_value(gather, kWhere), 0.5);
    EXPECT_EQ(plugin::fill_value(gather_view.get()), 0.5);

    const Params scatter = scatter_add_params(dims, mode);
    const HostView scatter_view("scatter-add", scatter);
    EXPECT_EQ(indexing_dims(Prim::kScatterAdd, scatter, kWhere), dims);
    EXPECT_EQ(plugin::indexing_dims(scatter_view.get()), dims);
    EXPECT_EQ(plugin::index_mode(scatter_view.get()), index_mode(scatter, kWhere));
  }
  // The forms JAX prints besides the builders': a mode's value, a missing mode, fill values.
  for (const ParamValue& mode : {ParamValue::of_int(1), ParamValue::of_int(3), ParamValue::none()}) {
    Params params;
    params.set("mode", mode);
    EXPECT_EQ(plugin::index_mode(HostView("gather", params).get()), index_mode(params, kWhere));
  }
  EXPECT_EQ(plugin::index_mode(HostView("gather", Params{}).get()), IndexMode::kFillOrDrop);
  for (const ParamValue& fill : {ParamValue::none(), ParamValue::of_int(-2), ParamValue::of_bool(true),
                                 ParamValue::of_ident("inf"), ParamValue::of_ident("-inf")}) {
    Params params;
    params.set("fill_value", fill);
    EXPECT_EQ(plugin::fill_value(HostView("gather", params).get()), fill_value(params, kWhere)) << fill.str();
  }
  Params nan_fill;
  nan_fill.set("fill_value", ParamValue::of_ident("nan"));
  EXPECT_TRUE(std::isnan(*fill_value(nan_fill, kWhere)));
  EXPECT_TRUE(std::isnan(*plugin::fill_value(HostView("gather", nan_fill).get())));
}

TEST(ParamReader, FftTypeAndRoundingReadAlike) {
  for (const FftKind kind : {FftKind::kFft, FftKind::kIfft, FftKind::kRfft, FftKind::kIrfft}) {
    const Params params = fft_params(kind, {8});
    EXPECT_EQ(fft_kind(params, kWhere), kind);
    EXPECT_EQ(plugin::fft_kind(HostView("fft", params).get()), kind);
  }
  Params named;
  named.set("fft_type", ParamValue::of_ident("FftType.IRFFT"));
  EXPECT_EQ(fft_kind(named, kWhere), FftKind::kIrfft);
  EXPECT_EQ(plugin::fft_kind(HostView("fft", named).get()), FftKind::kIrfft);

  for (const ParamValue& method : {ParamValue::of_int(0), ParamValue::of_int(1),
                                   ParamValue::of_ident("RoundingMethod.TO_NEAREST_EVEN"),
                                   ParamValue::of_ident("RoundingMethod.AWAY_FROM_ZERO")}) {
    Params params;
    params.set("rounding_method", method);
    EXPECT_EQ(plugin::rounds_to_nearest_even(HostView("round", params).get()), rounds_to_nearest_even(params, kWhere))
        << method.str();
  }
  EXPECT_FALSE(plugin::rounds_to_nearest_even(HostView("round", Params{}).get()));
}

// The core words a bad param for the program's author; the SDK, which sees params the host has
// checked, throws ArgumentError only where a reader cannot go on.
TEST(ParamReader, EachSideKeepsItsErrors) {
  Params bad_dot;
  bad_dot.set("dimension_numbers", ParamValue::of_ints({1, 0}));
  try {
    dot_dims(bad_dot, kWhere);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "test.jaxpr:1:1: dimension_numbers must be (([lhs_contract], [rhs_contract]), ([lhs_batch], "
              "[rhs_batch])), got (1, 0)");
  }
  try {
    plugin::dot_dims(HostView("dot_general", bad_dot).get());
    FAIL() << "no error";
  } catch (const plugin::ArgumentError& e) {
    EXPECT_EQ(std::string(e.what()), "dot_general: dimension_numbers is not ((lc, rc), (lb, rb))");
  }
  try {
    plugin::window_params(HostView("reduce_window_sum", Params{}).get());
    FAIL() << "no error";
  } catch (const plugin::ArgumentError& e) {
    EXPECT_EQ(std::string(e.what()), "reduce_window_sum has no parameter window_dimensions");
  }
  Params bad_select;
  bad_select.set("select_prim", ParamValue::of_ident("gt"));
  EXPECT_THROW(select_prim(bad_select, kWhere), Error);
  EXPECT_FALSE(plugin::selects_max(HostView("select_and_gather_add", bad_select).get()));
}

}  // namespace
}  // namespace rematkit
