// Flax's nn.scan and nn.remat_scan over identical layers (ModelBuilder::scan, remat_scan): the
// params stacked [length, ...] are the unrolled layers' params, the loss and the gradients are those
// of the unrolled model bit for bit, and remat_scan nests checkpoints as flax/core/lift.py does.
#include <gtest/gtest.h>

#include "rematkit/flax/model_builder.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

constexpr int64_t kWidth = 5, kBatch = 3, kLayers = 6;

Model unrolled(const std::string& policy, int64_t width = kWidth) {
  ModelBuilder b;
  for (int64_t l = 0; l < kLayers; ++l) {
    auto layer = [width](ModelBuilder& m) { m.dense(width).tanh(); };
    if (policy.empty()) layer(b);
    else b.checkpoint(policy, layer);
  }
  return b.build(kBatch, width, 4);
}

// The stacked params' rows, in the unrolled model's argument order (x, Dense_l/bias, Dense_l/kernel).
std::vector<std::vector<double>> unstacked(const GradientResult& r, const Model& m, int64_t width) {
  std::vector<std::vector<double>> rows{r.gradients[0] ? r.gradients[0]->data : std::vector<double>{}};
  const Tensor& bias = *r.gradients[1];
  const Tensor& kernel = *r.gradients[2];
  const int64_t layers = m.arguments[1].type.shape[0];
  for (int64_t l = 0; l < layers; ++l) {
    rows.emplace_back(bias.data.begin() + l * width, bias.data.begin() + (l + 1) * width);
    rows.emplace_back(kernel.data.begin() + l * width * width, kernel.data.begin() + (l + 1) * width * width);
  }
  return rows;
}

void expect_same_as_unrolled(const Model& scanned, const std::string& policy, int64_t width = kWidth,
                             const std::vector<std::string>& backends = {"reference"}) {
  const Model plain = unrolled(policy, width);
  // The stacked params hold the unrolled ones, drawn in the same order.
  ASSERT_EQ(scanned.arguments.size(), 3u);
  ASSERT_EQ(scanned.arguments[1].type.shape, (Shape{kLayers, width}));
  ASSERT_EQ(scanned.arguments[2].type.shape, (Shape{kLayers, width, width}));
  const BackendOptions options{backends, &default_plugins()};
  const GradientResult a = run_gradient(linearize_with(scanned.program), {}, scanned.arguments, options);
  const GradientResult b = run_gradient(linearize_with(plain.program), {}, plain.arguments, options);
  EXPECT_EQ(a.outputs[0].data, b.outputs[0].data);
  const auto rows = unstacked(a, scanned, width);
  ASSERT_EQ(rows.size(), b.gradients.size());
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i], b.gradients[i]->data) << "argument " << i;
  for (size_t i = 1; i < rows.size(); ++i) {  // and the params themselves
    const Tensor& stacked = scanned.arguments[i % 2 == 1 ? 1 : 2];
    const size_t n = plain.arguments[i].data.size(), l = (i - 1) / 2;
    EXPECT_EQ(std::vector<double>(stacked.data.begin() + static_cast<long>(l * n), stacked.data.begin() + static_cast<long>((l + 1) * n)),
              plain.arguments[i].data);
  }
}

TEST(ScanLayers, AScanOfLayersIsTheUnrolledModel) {
  ModelBuilder b;
  b.scan(kLayers, [](ModelBuilder& m) { m.dense(kWidth).tanh(); });
  expect_same_as_unrolled(b.build(kBatch, kWidth, 4), "");
}

// Rows of whole cache lines (16 floats) are read and written in place by the scan's runner, the
// layer's output that is both the next carry and a saved row included (scan_runner.cpp); rows of 5
// floats above are copied. Both give the unrolled model's bits, here on the default backends too.
TEST(ScanLayers, RowsReadAndWrittenInPlaceGiveTheUnrolledBits) {
  constexpr int64_t kLineWidth = 16;
  std::vector<std::string> fast;  // the default list's backends that are built
  for (const char* name : {"onednn", "highway", "reference"})
    if (backend_installed(name)) fast.push_back(name);
  for (const std::string policy : {"", "nothing_saveable"}) {
    for (const std::vector<std::string>& backends : {std::vector<std::string>{"reference"}, fast}) {
      SCOPED_TRACE(policy + " on " + backends.front());
      ModelBuilder b;
      const auto layer = [](ModelBuilder& m) { m.dense(kLineWidth).tanh(); };
      if (policy.empty()) b.scan(kLayers, layer);
      else b.scan(kLayers, [&](ModelBuilder& m) { m.checkpoint(policy, layer); });
      expect_same_as_unrolled(b.build(kBatch, kLineWidth, 4), policy, kLineWidth, backends);
    }
  }
}

TEST(ScanLayers, RematInsideTheScanIsPerLayerRemat) {
  ModelBuilder b;
  b.scan(kLayers, [](ModelBuilder& m) { m.checkpoint("nothing_saveable", [](ModelBuilder& l) { l.dense(kWidth).tanh(); }); });
  const Model m = b.build(kBatch, kWidth, 4);
  expect_same_as_unrolled(m, "nothing_saveable");
  // What it keeps: the params (forwarded xs), each layer's input stacked (the carries), and 2y of
  // the loss sum(y^2).
  const std::vector<std::string> lines = residual_lines(linearize_with(m.program));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3].substr(0, 24), "f32[3,5] output of mul f");
  EXPECT_EQ(lines[2].substr(0, lines[2].find(' ')), "f32[6,3,5]");
}

TEST(ScanLayers, RematScanNestsCheckpointsAndKeepsBlockInputs) {
  ModelBuilder b;
  b.remat_scan({2, 3}, "nothing_saveable", [](ModelBuilder& m) { m.dense(kWidth).tanh(); });
  const Model m = b.build(kBatch, kWidth, 4);
  // Params [2, 3, ...]: the unrolled model's in order once flattened.
  ASSERT_EQ(m.arguments[1].type.shape, (Shape{2, 3, kWidth}));
  Model flat = m;
  flat.arguments[1].type.shape = {kLayers, kWidth};
  flat.arguments[2].type.shape = {kLayers, kWidth, kWidth};
  const Model plain = unrolled("");
  for (size_t i = 1; i < 3; ++i) {
    std::vector<double> joined;
    for (size_t l = 0; l < kLayers; ++l)
      joined.insert(joined.end(), plain.arguments[1 + 2 * l + (i - 1)].data.begin(), plain.arguments[1 + 2 * l + (i - 1)].data.end());
    EXPECT_EQ(m.arguments[i].data, joined);
  }
  // Outer scan over 2 blocks: each block's input is kept (the carry, stacked f32[2,3,5]); the
  // inner scan runs again in the backward pass of its checkpoint.
  const std::vector<std::string> lines = residual_lines(linearize_with(m.program));
  EXPECT_EQ(lines, (std::vector<std::string>{"f32[2,3,5] from the argument params_ScanLayers_0_ScanLayers_0_Dense_0_bias",
                                             "f32[2,3,5,5] from the argument params_ScanLayers_1_ScanLayers_1_Dense_0_kernel",
                                             "f32[2,3,5] output of scan from <flax module>:2",
                                             "f32[3,5] output of mul from <flax module>:34"}))
      << ::testing::PrintToString(lines);
  // The gradient against finite differences.
  const RandomInputs in{{}, m.arguments};
  const std::vector<Tensor> fd = finite_difference_gradients(m.program, in);
  const GradientResult ad = interpret_gradient(linearize_with(m.program), {}, m.arguments, Arithmetic::kFloat64);
  for (size_t a = 1; a < fd.size(); ++a)
    for (size_t i = 0; i < fd[a].data.size(); ++i)
      EXPECT_NEAR(ad.gradients[a]->data[i], fd[a].data[i], 1e-6 * (1 + std::abs(fd[a].data[i]))) << a << " " << i;
}

}  // namespace
}  // namespace rematkit::testing
