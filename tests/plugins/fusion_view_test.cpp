// The SDK's reading of a fused equation (rematkit/plugin/fusion_view.hpp): a well-formed one as
// the host builds it, and the malformed ones a backend must decline rather than trust.
#include "rematkit/plugin/fusion_view.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

rk_value named(const char* name, rk_value v) {
  v.name = name;
  return v;
}
rk_value integer(int64_t i) {
  rk_value v{};
  v.struct_size = sizeof(rk_value);
  v.kind = RK_VALUE_INT;
  v.int_value = i;
  return v;
}
rk_value list(const std::vector<rk_value>& items, const char* call = nullptr) {
  rk_value v{};
  v.struct_size = sizeof(rk_value);
  v.kind = RK_VALUE_LIST;
  v.items = items.data();
  v.num_items = items.size();
  v.string_value = call;
  return v;
}

// x:f32[2,4] @ w:f32[4,3], then relu: parts (dot_general 0 1) and (relu 2), result `result`.
struct DenseRelu {
  int64_t x_shape[2] = {2, 4}, w_shape[2] = {4, 3}, y_shape[2] = {2, 3};
  rk_type inputs[2] = {{sizeof(rk_type), RK_DTYPE_F32, RK_MEMORY_DEVICE, 2, x_shape},
                       {sizeof(rk_type), RK_DTYPE_F32, RK_MEMORY_DEVICE, 2, w_shape}};
  rk_type outputs[1] = {{sizeof(rk_type), RK_DTYPE_F32, RK_MEMORY_DEVICE, 2, y_shape}};
  std::vector<rk_value> shape{integer(2), integer(3)};
  std::vector<rk_value> dot_operands{integer(0), integer(1)}, relu_operands;
  std::vector<rk_value> dot_items, relu_items, parts, results, params;
  rk_equation_view view{};

  DenseRelu(int64_t relu_reads, int64_t result, const char* primitive = "rk_fusion") {
    relu_operands = {integer(relu_reads)};
    dot_items = {named("operands", list(dot_operands)), named("dtype", integer(RK_DTYPE_F32)), named("shape", list(shape))};
    relu_items = {named("operands", list(relu_operands)), named("dtype", integer(RK_DTYPE_F32)), named("shape", list(shape))};
    parts = {list(dot_items, "dot_general"), list(relu_items, "relu")};
    results = {integer(result)};
    params = {named("parts", list(parts)), named("results", list(results))};
    view.struct_size = sizeof(rk_equation_view);
    view.primitive = primitive;
    view.params = params.data();
    view.num_params = params.size();
    view.inputs = inputs;
    view.num_inputs = 2;
    view.outputs = outputs;
    view.num_outputs = 1;
  }
};

TEST(FusionView, ReadsPartsOperandsTypesAndResults) {
  const DenseRelu e(2, 3);
  const auto f = rematkit::plugin::Fusion::of(&e.view);
  ASSERT_TRUE(f.has_value());
  ASSERT_EQ(f->parts().size(), 2u);
  EXPECT_EQ(f->parts()[0].prim, rematkit::Prim::kDotGeneral);
  EXPECT_EQ(f->parts()[1].operands, (std::vector<int64_t>{2}));
  EXPECT_EQ(f->shape(2), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f->shape(1), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(f->readers(2), 1u);
  EXPECT_TRUE(f->is_result(3));
  EXPECT_FALSE(f->is_result(2));
  // A part as an equation of its own: relu reads the product's f32[2,3] and has no extra params.
  const auto relu = f->part_equation(1);
  EXPECT_STREQ(relu.get()->primitive, "relu");
  ASSERT_EQ(relu.get()->num_inputs, 1u);
  EXPECT_EQ(relu.get()->inputs[0].rank, 2);
  EXPECT_EQ(relu.get()->inputs[0].shape[1], 3);
  EXPECT_EQ(relu.get()->num_params, 0u);
}

TEST(FusionView, ARowSpreadCoversTheOutputsTrailingDims) {
  using rematkit::plugin::row_spread_trailing_dims;
  // A layer norm's mean, [B, S] or [B, S, 1], spread over [B, S, D]: one value per row of D.
  EXPECT_EQ(row_spread_trailing_dims({2, 3}, {0, 1}, {2, 3, 4}), 1u);
  EXPECT_EQ(row_spread_trailing_dims({2, 3, 1}, {0, 1, 2}, {2, 3, 4}), 1u);
  EXPECT_EQ(row_spread_trailing_dims({2}, {0}, {2, 3, 4}), 2u);
  // Not one value per row: a bias's [D] over every row, dims out of order, sizes that differ, the
  // whole output (a copy) and a scalar (no leading dim).
  EXPECT_EQ(row_spread_trailing_dims({4}, {2}, {2, 3, 4}), 0u);
  EXPECT_EQ(row_spread_trailing_dims({3, 2}, {1, 0}, {2, 3, 4}), 0u);
  EXPECT_EQ(row_spread_trailing_dims({2, 5}, {0, 1}, {2, 3, 4}), 0u);
  EXPECT_EQ(row_spread_trailing_dims({2, 3, 4}, {0, 1, 2}, {2, 3, 4}), 0u);
  EXPECT_EQ(row_spread_trailing_dims({1, 1}, {0, 1}, {2, 3}), 0u);
}

TEST(FusionView, DeclinesWhatTheHostNeverBuilds) {
  auto declined = [](int64_t relu_reads, int64_t result, const char* primitive = "rk_fusion") {
    const DenseRelu e(relu_reads, result, primitive);
    return !rematkit::plugin::Fusion::of(&e.view).has_value();
  };
  EXPECT_FALSE(declined(2, 3));           // the well-formed one, for contrast
  EXPECT_TRUE(declined(3, 3));            // relu reads its own result
  EXPECT_TRUE(declined(-1, 3));           // no such value
  EXPECT_TRUE(declined(2, 0));            // an input as a result
  EXPECT_TRUE(declined(2, 4));            // past the last part
  EXPECT_TRUE(declined(2, 3, "relu"));    // not a fusion
}

// p:f32[3] - s:f32[3], part (sub 0 1), result 2; with ABI 1.6's `in_place` (0, 0) when asked: the
// result written over p, a fused SGD update, which hosts stopped sending in 1.7.
struct Update {
  int64_t shape3[1] = {3};
  rk_type inputs[2] = {{sizeof(rk_type), RK_DTYPE_F32, RK_MEMORY_DEVICE, 1, shape3},
                       {sizeof(rk_type), RK_DTYPE_F32, RK_MEMORY_DEVICE, 1, shape3}};
  rk_type outputs[1] = {{sizeof(rk_type), RK_DTYPE_F32, RK_MEMORY_DEVICE, 1, shape3}};
  std::vector<rk_value> shape{integer(3)}, operands{integer(0), integer(1)}, items, parts, results{integer(2)},
      pairs{integer(0), integer(0)}, params;
  rk_equation_view view{};

  explicit Update(bool in_place) {
    items = {named("operands", list(operands)), named("dtype", integer(RK_DTYPE_F32)), named("shape", list(shape))};
    parts = {list(items, "sub")};
    params = {named("parts", list(parts)), named("results", list(results))};
    if (in_place) params.push_back(named("in_place", list(pairs)));
    view.struct_size = sizeof(rk_equation_view);
    view.primitive = "rk_fusion";
    view.params = params.data();
    view.num_params = params.size();
    view.inputs = inputs;
    view.num_inputs = 2;
    view.outputs = outputs;
    view.num_outputs = 1;
  }
};

TEST(FusionView, DeclinesAResultWrittenOverAnInput) {
  const Update apart(false), over_p(true);
  EXPECT_TRUE(rematkit::plugin::Fusion::of(&apart.view).has_value());
  EXPECT_FALSE(rematkit::plugin::Fusion::of(&over_p.view).has_value());
}

}  // namespace
