// One device's bytes on a mesh: values split where a program's shardings say (a constraint, a
// sharded type, an XLA tile assignment), carried through the operations between them; a
// MaxText-style program against the same model written per device as a shard_map; and --mesh
// checked against what the program names.
#include <gtest/gtest.h>

#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

std::string with_policy(std::string text, const std::string& policy) {
  for (size_t at = text.find("POLICY"); at != std::string::npos; at = text.find("POLICY")) text.replace(at, 6, policy);
  return text;
}

// Two layers tanh(x W) in MaxText's way: every activation constrained to be split over fsdp on
// its batch dim, every weight split over fsdp on its first dim, a checkpoint per layer.
constexpr const char* kMaxTextStyle = R"({ lambda ; x:f32[64,32] w1:f32[32,32] w2:f32[32,32]. let
    xc:f32[64,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec('fsdp', None)) unconstrained_dims=frozenset()] x
    w1c:f32[32,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec('fsdp', None)) unconstrained_dims=frozenset()] w1
    w2c:f32[32,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec('fsdp', None)) unconstrained_dims=frozenset()] w2
    a1:f32[64,32] = checkpoint[jaxpr={ lambda ; p:f32[64,32] q:f32[32,32]. let
        h:f32[64,32] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p q
        r:f32[64,32] = tanh h
      in (r,) } differentiated=True policy=POLICY prevent_cse=True] xc w1c
    y1:f32[64,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec('fsdp', None)) unconstrained_dims=frozenset()] a1
    a2:f32[64,32] = checkpoint[jaxpr={ lambda ; p:f32[64,32] q:f32[32,32]. let
        h:f32[64,32] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p q
        r:f32[64,32] = tanh h
      in (r,) } differentiated=True policy=POLICY prevent_cse=True] y1 w2c
    y2:f32[64,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec('fsdp', None)) unconstrained_dims=frozenset()] a2
    l:f32[] = reduce_sum[axes=(0, 1)] y2
  in (l,) })";

// The same model as one device's code: its blocks of x and of the weights, each weight gathered
// whole inside its layer.
constexpr const char* kPerDevice = R"({ lambda ; x:f32[64,32] w1:f32[32,32] w2:f32[32,32]. let
    l:f32[] = shard_map[check_vma=False in_specs=(P('fsdp'), P('fsdp'), P('fsdp')) jaxpr={ lambda ; xb:f32[8,32] w1s:f32[4,32] w2s:f32[4,32]. let
        y1:f32[8,32] = checkpoint[jaxpr={ lambda ; p:f32[8,32] q:f32[4,32]. let
            qf:f32[32,32] = all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=fsdp axis_size=8 tiled=True] q
            h:f32[8,32] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p qf
            r:f32[8,32] = tanh h
          in (r,) } differentiated=True policy=POLICY prevent_cse=True] xb w1s
        y2:f32[8,32] = checkpoint[jaxpr={ lambda ; p:f32[8,32] q:f32[4,32]. let
            qf:f32[32,32] = all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=fsdp axis_size=8 tiled=True] q
            h:f32[8,32] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p qf
            r:f32[8,32] = tanh h
          in (r,) } differentiated=True policy=POLICY prevent_cse=True] y1 w2s
        s:f32[] = reduce_sum[axes=(0, 1)] y2
        t:f32[] = psum[axes=('fsdp',) axis_index_groups=None] s
      in (t,) } mesh=Mesh('fsdp': 8) out_specs=(P(),)] x w1 w2
  in (l,) })";

// Per device, an [8,32] activation block is 1 KiB and a [4,32] weight block 512 bytes. A layer's
// checkpoint keeps its inputs under nothing_saveable (x or y1, and the weight): 1024 + 512 + 1024 +
// 512 = 3072; dots_saveable keeps each layer's product h too: 3072 + 2 x 1024 = 5120. Whole, the
// same residuals are 8 times as many bytes.
TEST(DevicePlacement, MaxTextStyleKeepsWhatTheSameModelPerDeviceKeeps) {
  const Mesh fsdp = parse_mesh_option("fsdp=8", {});
  for (const auto& [policy, bytes] : {std::pair{"nothing_saveable", 3072}, std::pair{"dots_saveable", 5120}}) {
    const Program annotated = parse_program(with_policy(kMaxTextStyle, policy), "maxtext");
    Linearization placed = linearize_with(annotated);
    EXPECT_EQ(residual_bytes(placed), 8 * bytes) << policy << " whole";
    const PlacementSummary s = place_on_mesh(placed, fsdp);
    EXPECT_EQ(residual_bytes(placed), bytes) << policy << "\n" << format_residual_report(placed, true);
    EXPECT_EQ(s.unplaced_values, 0) << policy;
    Linearization per_device = linearize_with(parse_program(with_policy(kPerDevice, policy), "per_device"));
    place_on_mesh(per_device, *per_device.graph.mesh);
    EXPECT_EQ(residual_bytes(per_device), bytes) << policy << "\n" << format_residual_report(per_device, true);
  }
}

// Where GSPMD needs no collective that holds memory (activations split over fsdp on their batch
// dim, weights whole: the weight gradients' all-reduce keeps their shape), one device's step is
// the same model written at one device's shapes, buffer for buffer: the planned peaks are equal.
std::string two_layers(const std::string& rows, const std::string& spec) {
  std::string text = R"({ lambda ; x:f32[ROWS,32] w1:f32[32,32] w2:f32[32,32]. let
    xc:f32[ROWS,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=SPEC) unconstrained_dims=frozenset()] x
    a1:f32[ROWS,32] = checkpoint[jaxpr={ lambda ; p:f32[ROWS,32] q:f32[32,32]. let
        h:f32[ROWS,32] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p q
        r:f32[ROWS,32] = tanh h
      in (r,) } differentiated=True policy=nothing_saveable prevent_cse=True] xc w1
    y1:f32[ROWS,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=SPEC) unconstrained_dims=frozenset()] a1
    a2:f32[ROWS,32] = checkpoint[jaxpr={ lambda ; p:f32[ROWS,32] q:f32[32,32]. let
        h:f32[ROWS,32] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p q
        r:f32[ROWS,32] = tanh h
      in (r,) } differentiated=True policy=nothing_saveable prevent_cse=True] y1 w2
    l:f32[] = reduce_sum[axes=(0, 1)] a2
  in (l,) })";
  for (auto [key, value] : {std::pair{std::string("ROWS"), rows}, std::pair{std::string("SPEC"), spec}})
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key)) text.replace(at, key.size(), value);
  return text;
}

TEST(DevicePlacement, AStepSplitOnItsBatchPlansAsTheModelAtOneDevicesShapes) {
  const BackendOptions reference{{"reference"}, &default_plugins()};
  Linearization placed = linearize_with(parse_program(two_layers("64", "PartitionSpec('fsdp', None)"), "annotated"));
  const PlacementSummary s = place_on_mesh(placed, parse_mesh_option("fsdp=8", {}));
  EXPECT_GT(s.split_values, 0);
  const Linearization local = linearize_with(parse_program(two_layers("8", "PartitionSpec()"), "per_device"));
  const int64_t placed_peak =
      build_step_program(placed, reference, Pass::kBackward, InputMode::kLoadedEachRun).layout().arena(MemorySpace::kDevice);
  const int64_t local_peak =
      build_step_program(local, reference, Pass::kBackward, InputMode::kLoadedEachRun).layout().arena(MemorySpace::kDevice);
  EXPECT_GT(local_peak, 0);
  EXPECT_EQ(placed_peak, local_peak);
  EXPECT_EQ(residual_bytes(placed), residual_bytes(local));
}

// A sharded type's dims, XLA's tile assignments (the replicated last tile dim dropped), a
// PositionalSharding's grid, and through transpose, broadcast, a reduction and dot_general.
TEST(DevicePlacement, EveryPrintedShardingAndTheRulesBetween) {
  const Program p = parse_program(R"({ lambda ; a:f32[8@x,4] b:f32[8,6]. let
      c:f32[4,8] = transpose[permutation=(1, 0)] a
      d:f32[8,6] = sharding_constraint[sharding=GSPMDSharding({devices=[2,1,4]<=[8] last_tile_dim_replicate}) unconstrained_dims=set()] b
      e:f32[4,6] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] c d
      f:f32[6] = reduce_sum[axes=(0,)] e
      g:f32[3,6] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 6)] f
      h:f32[3,6] = sharding_constraint[sharding=PositionalSharding([[{CPU 0} {CPU 1}]], shape=(1, 2)) unconstrained_dims={}] g
      i:f32[] = reduce_sum[axes=(0, 1)] h
    in (i,) })", "p");
  Linearization lin = linearize_with(p);
  place_on_mesh(lin, parse_mesh_option("x=2,y=4", {}));
  auto tiles_of_argument = [&](size_t i) { return lin.graph.values[lin.arguments[i]].tiles; };
  EXPECT_EQ(tiles_of_argument(0), (std::vector<int64_t>{2, 1}));  // 8@x
  EXPECT_EQ(tiles_of_argument(1), (std::vector<int64_t>{2, 1}));  // [2,1,4] with 4 replicas: dim 0 in 2
  auto tiles_of = [&](Prim prim) {
    for (const FlatEquation& eqn : lin.graph.eqns)
      if (eqn.prim == prim && eqn.role == EqnRole::kPrimal) return lin.graph.values[eqn.outputs[0]].tiles;
    return std::vector<int64_t>{-1};
  };
  EXPECT_EQ(tiles_of(Prim::kTranspose), (std::vector<int64_t>{1, 2}));
  // dot_general: c's free dim 0 (whole), d's free dim 1 (whole): nothing split, so no tiles.
  EXPECT_EQ(tiles_of(Prim::kDotGeneral), (std::vector<int64_t>{}));
  EXPECT_EQ(tiles_of(Prim::kBroadcastInDim), (std::vector<int64_t>{1, 2}));  // back from h's grid
}

// A scan's body is placed from its operands (the carry split over x on its batch dim; the
// weights, no sharding on them, whole), and its stacked residuals take the body's blocks: the
// weights f32[3,8,8] 768 bytes, and three stacks of the body's [16,8] values (the carry in, tanh's
// output and its derivative's factor), each [3,4,8] per device, 384 bytes: 1920 (whole: 5376).
TEST(DevicePlacement, ScanBodiesArePlacedFromTheirOperands) {
  Linearization lin = linearize_with(parse_program(R"({ lambda ; x:f32[16,8] ws:f32[3,8,8]. let
      xc:f32[16,8] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('x': 4), spec=PartitionSpec('x', None)) unconstrained_dims=frozenset()] x
      h:f32[16,8] = scan[jaxpr={ lambda ; c:f32[16,8] w:f32[8,8]. let
          d:f32[16,8] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] c w
          e:f32[16,8] = tanh d
        in (e,) } length=3 linear=(False, False) num_carry=1 num_consts=0 reverse=False unroll=1] xc ws
      l:f32[] = reduce_sum[axes=(0, 1)] h
    in (l,) })", "scan"));
  EXPECT_EQ(residual_bytes(lin), 5376);
  place_on_mesh(lin, parse_mesh_option("x=4", {}));
  EXPECT_EQ(residual_bytes(lin), 1920) << format_residual_report(lin, true);
}

TEST(DevicePlacement, ValuesNoShardingReachesAreCountedWhole) {
  Linearization lin = linearize_with(parse_program(R"({ lambda ; a:f32[8,4] b:f32[16]. let
      c:f32[8,4] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('x': 4), spec=PartitionSpec('x',)) unconstrained_dims=frozenset()] a
      d:f32[8,4] = sin c
      e:f32[16] = cos b
      f:f32[] = reduce_sum[axes=(0, 1)] d
      g:f32[] = reduce_sum[axes=(0,)] e
      h:f32[] = add f g
    in (h,) })", "p"));
  const PlacementSummary s = place_on_mesh(lin, parse_mesh_option("x=4", {}));
  EXPECT_GT(s.split_values, 0);
  EXPECT_GT(s.unplaced_values, 0);  // b, cos b and their tangents
  EXPECT_EQ(s.unplaced_bytes % 64, 0);  // each an f32[16]
  EXPECT_NE(placement_line(s).find("that no sharding reaches are counted whole on every device"), std::string::npos);
}

// FSDP's split of parameters: each along its largest dim the axis divides, through a constraint.
TEST(DevicePlacement, ArgumentsSplitOverAnAxis) {
  const Program p = parse_program(R"({ lambda ; a:f32[6,32] b:f32[16,8,40] c:f32[3]. let
      d:f32[] = reduce_sum[axes=(0, 1)] a
    in (d,) })", "p");
  const Program split = split_arguments_over_axis(p, {0, 1, 2}, "fsdp", 8);
  ASSERT_EQ(split.eqns.size(), 3u);  // c: no dim of 3 splits in 8
  EXPECT_EQ(split.eqns[0].params.find("sharding")->text, "NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec(None, 'fsdp'))");
  EXPECT_EQ(split.eqns[1].params.find("sharding")->text,
            "NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec(None, None, 'fsdp'))");
  EXPECT_EQ(split.eqns[2].inputs[0].var, split.eqns[0].outputs[0]);  // the sum reads the split value
  EXPECT_EQ(parse_program(print_program(split), "printed").eqns.size(), 3u);
}

TEST(DevicePlacement, MeshOptionMustMatchTheProgram) {
  const Program p = parse_program(kMaxTextStyle, "p");
  EXPECT_EQ(usage_error([&] { check_mesh_option(parse_mesh_option("data=2", {"--mesh", 0, 0}), p, {"--mesh", 0, 0}); }),
            "--mesh: mesh axis 'data' is not one the program names (fsdp)");
  EXPECT_EQ(usage_error([&] { check_mesh_option(parse_mesh_option("fsdp=4", {"--mesh", 0, 0}), p, {"--mesh", 0, 0}); }),
            "--mesh: mesh axis 'fsdp' has 4 devices here but 8 in the program's mesh (fsdp=8)");
  EXPECT_EQ(usage_error([&] { check_mesh_option(parse_mesh_option("fsdp=8", {"--mesh", 0, 0}), p, {"--mesh", 0, 0}); }), "");
}

}  // namespace
}  // namespace rematkit::testing
