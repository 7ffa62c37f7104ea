// shard_map, pmap and the collectives of jax/_src/lax/parallel.py on a simulated mesh: what each
// collective gives each device (worked out by hand on iota inputs), gradients of data-parallel
// and FSDP steps written with shard_map against the same models written whole, their per-device
// residual bytes under per-layer checkpoints worked out by hand, and the bad inputs: an axis the
// mesh lacks, a dim its axes do not divide, devices that part ways at a collective.
#include <gtest/gtest.h>

#include <numeric>

#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/interpreter/device_collective.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/interpreter/simulated_mesh.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/parser.hpp"
#include "support/sharded_steps.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

TEST(Collectives, EachDeviceGetsWhatParallelPyDefines) {
  expect_what_parallel_py_defines(evaluate_f64(kEveryCollective, {iota({8}), iota({4, 4})}));
}

// Over a 2x2 mesh: a collective over one axis works within each row or column of devices, and
// a dim split over two axes takes the first as the slower.
TEST(Collectives, OneAxisOfTwoAndADimOverBoth) {
  const std::vector<Tensor> out = evaluate_f64(R"({ lambda ; a:f32[4]. let
      r:f32[4] q:f32[4] = shard_map[check_vma=False in_specs=(P(('x', 'y'),),) jaxpr={ lambda ; c:f32[1]. let
          s:f32[1] = psum[axes=('y',) axis_index_groups=None] c
          i:i32[] = axis_index[axis_name=('x', 'y')]
          f:f32[] = convert_element_type[new_dtype=float32 weak_type=False] i
          g:f32[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,)] f
        in (s, g) } mesh=Mesh('x': 2, 'y': 2) out_specs=(P(('x', 'y'),), P(('x', 'y'),))] a
    in (r, q) })",
                                               {tensor_of({4}, {1, 10, 100, 1000})});
  EXPECT_EQ(out[0].data, (std::vector<double>{11, 11, 1100, 1100}));  // devices (0,0)+(0,1), (1,0)+(1,1)
  EXPECT_EQ(out[1].data, (std::vector<double>{0, 1, 2, 3}));
}

// The step executor's collectives on buffers (psum, pmax, pmin of f32; all_gather) give the bits
// the tensor path gives, on a (2, 3) mesh: sums of values whose order matters in f32, over one axis
// and over both; a gather along an inner dim, tiled and stacked.
TEST(Collectives, OnBuffersTheSameBitsAsOnTensors) {
  const Mesh mesh = parse_mesh_option("x=2,y=3", {});
  const Type operand{DType::kF32, {2, 5}};
  struct Case {
    Prim prim;
    std::vector<std::pair<std::string, std::string>> params;
    Type out;
  };
  const std::vector<Case> cases = {
      {Prim::kPsum, {{"axes", "('x', 'y')"}}, operand},
      {Prim::kPsum, {{"axes", "('y',)"}}, operand},
      {Prim::kPmax, {{"axes", "('y', 'x')"}}, operand},
      {Prim::kPmin, {{"axes", "('x',)"}}, operand},
      {Prim::kAllGather, {{"all_gather_dimension", "1"}, {"axis_name", "('y',)"}, {"axis_size", "3"}, {"tiled", "True"}},
       Type{DType::kF32, {2, 15}}},
      {Prim::kAllGather, {{"all_gather_dimension", "1"}, {"axis_name", "('x', 'y')"}, {"axis_size", "6"}, {"tiled", "False"}},
       Type{DType::kF32, {2, 6, 5}}},
  };
  for (const Case& c : cases) {
    Params params;
    params.set("axis_index_groups", ParamValue::none());
    for (const auto& [key, value] : c.params) params.set(key, parse_param_value(value, "test"));
    std::vector<std::vector<float>> on_buffers(6), on_tensors(6);
    run_on_simulated_mesh(mesh, [&](int64_t d) {
      std::vector<float> mine(10);
      for (size_t i = 0; i < mine.size(); ++i) mine[i] = 1.0f / static_cast<float>(3 + 7 * d + static_cast<int64_t>(i)) * 1e4f;
      std::vector<float>& out = on_buffers[static_cast<size_t>(d)];
      out.resize(static_cast<size_t>(c.out.num_elements()));
      ASSERT_TRUE(run_device_collective_on_buffers(simulated_transport(), c.prim, params, mine.data(), operand, out.data(), c.out));
      Tensor given{operand, std::vector<double>(mine.begin(), mine.end())};
      const Tensor t = run_device_collective(simulated_transport(), c.prim, params, &given, c.out, Arithmetic::kFloat32);
      on_tensors[static_cast<size_t>(d)].assign(t.data.begin(), t.data.end());
    });
    EXPECT_EQ(on_buffers, on_tensors) << prim_name(c.prim) << " case " << (&c - cases.data());
  }
}

// pmap: in_axes picks the mapped dim (None: the same value on every device), out_axes where the
// devices' results stack.
TEST(Collectives, PmapMapsTheDimsInAxesName) {
  const std::vector<Tensor> out = evaluate_f64(R"({ lambda ; a:f32[2,3] b:f32[]. let
      c:f32[3,2] = xla_pmap[axis_name=i axis_size=2 backend=None call_jaxpr={ lambda ; d:f32[3] e:f32[]. let
          f:f32[3] = mul d e
          g:f32[3] = psum[axes=('i',) axis_index_groups=None] f
        in (g,) } devices=None donated_invars=(False, False) global_axis_size=2 in_axes=(0, None)
        is_explicit_global_axis_size=False name=f out_axes=(1,)] a b
    in (c,) })",
                                               {iota({2, 3}), Tensor::scalar(2.0)});
  // Row sums over the 2 devices of 2 a: (0+3) 2, (1+4) 2, (2+5) 2, each device's in column d.
  EXPECT_EQ(out[0].data, (std::vector<double>{6, 6, 10, 10, 14, 14}));
}

struct StepCase {
  const char* name;
  const char* program;
  const char* policy;
  int64_t bytes_per_device;  // worked out in the comment of kStepCases
};

// Per device, f32 [2,4] blocks are 32 bytes, a whole [4,4] weight 64. A checkpoint with
// nothing_saveable keeps its inputs (ad_checkpoint.py's remat_partial_eval): layer 1's x block and
// weight, layer 2's input y1 (layer 1's output) and weight. dots_saveable also keeps each layer's
// dot_general output h (no batch dims: jax.checkpoint_policies.dots_saveable) and recomputes only
// tanh and, in FSDP, the gather.
//   FSDP, nothing_saveable: x 32 + w1 block 32 + y1 32 + w2 block 32         = 128
//   FSDP, dots_saveable:    128 + h1 32 + h2 32                               = 192
//   data parallel, nothing_saveable: x 32 + w1 64 + y1 32 + w2 64            = 192
//   data parallel, dots_saveable:    192 + h1 32 + h2 32                      = 256
const StepCase kStepCases[] = {
    {"fsdp_nothing_saveable", kFsdpStep, "nothing_saveable", 128},
    {"fsdp_dots_saveable", kFsdpStep, "dots_saveable", 192},
    {"data_parallel_nothing_saveable", kDataParallelStep, "nothing_saveable", 192},
    {"data_parallel_dots_saveable", kDataParallelStep, "dots_saveable", 256},
};

class ShardedStepTest : public ::testing::TestWithParam<StepCase> {};

TEST_P(ShardedStepTest, GradientsAreTheWholeModelsAndResidualsOneDevices) {
  const StepCase& c = GetParam();
  const Program sharded = parse_program(with_policy(c.program, c.policy), c.name);
  const Program whole = parse_program(kWholeModel, "whole");
  const Linearization lin = linearize_with(sharded);
  ASSERT_TRUE(lin.graph.mesh.has_value());
  EXPECT_EQ(lin.graph.mesh->str(), "data=2,fsdp=2");
  EXPECT_EQ(residual_bytes(lin), c.bytes_per_device) << format_residual_report(lin, true);
  const RandomInputs in = random_inputs(whole, 5);
  const GradientResult got = interpret_gradient(lin, in.constants, in.arguments, Arithmetic::kFloat64);
  const GradientResult want = interpret_gradient(linearize_with(whole), in.constants, in.arguments, Arithmetic::kFloat64);
  ASSERT_EQ(got.outputs.size(), 1u);
  EXPECT_NEAR(got.outputs[0].data[0], want.outputs[0].data[0], 1e-12);
  for (size_t a = 0; a < 3; ++a) {
    ASSERT_TRUE(got.gradients[a] && want.gradients[a]);
    for (size_t i = 0; i < want.gradients[a]->data.size(); ++i)
      EXPECT_NEAR(got.gradients[a]->data[i], want.gradients[a]->data[i], 1e-12) << "argument " << a << " element " << i;
  }
  // The report says which collectives the backward pass runs again: FSDP's gathers.
  const std::string report = format_residual_report(lin, true);
  const bool regathers = report.find("recomputed in the backward pass") != std::string::npos &&
                         report.find("all_gather at " + std::string(c.name) + ":4") != std::string::npos;
  EXPECT_EQ(regathers, std::string(c.name).rfind("fsdp", 0) == 0) << report;
}

INSTANTIATE_TEST_SUITE_P(Steps, ShardedStepTest, ::testing::ValuesIn(kStepCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ShardedPrograms, BadMeshesAndAxesAreOneLineAtTheirPlace) {
  EXPECT_EQ(usage_error([] {
              parse_program(R"({ lambda ; a:f32[6]. let
    b:f32[6] = shard_map[check_vma=False in_specs=(P('x'),) jaxpr={ lambda ; c:f32[2]. let d:f32[2] = sin c in (d,) } mesh=Mesh('x': 4) out_specs=(P('x'),)] a
  in (b,) })", "p");
            }),
            "p:2:16: operand 1 of shard_map is f32[6]: mesh axes x (4 devices) do not divide its dim 0 of size 6");
  EXPECT_EQ(usage_error([] {
              parse_program(R"({ lambda ; a:f32[8]. let
    b:f32[8] = shard_map[check_vma=False in_specs=(P('x'),) jaxpr={ lambda ; c:f32[2]. let
        d:f32[2] = psum[axes=('z',) axis_index_groups=None] c in (d,) } mesh=Mesh('x': 4) out_specs=(P('x'),)] a
  in (b,) })", "p");
            }),
            "p:3:20: psum over mesh axis 'z', which the mesh (x=4) does not have");
  EXPECT_EQ(usage_error([] {
              parse_program(R"({ lambda ; a:f32[8]. let
    b:f32[8] = shard_map[check_vma=False in_specs=(P('z'),) jaxpr={ lambda ; c:f32[2]. let d:f32[2] = sin c in (d,) } mesh=Mesh('x': 4) out_specs=(P('x'),)] a
  in (b,) })", "p");
            }),
            "p:2:16: mesh axis 'z' is not an axis of the mesh (x=4)");
  EXPECT_EQ(usage_error([] {
              parse_program("{ lambda ; a:f32[8]. let\n  b:f32[8] = psum[axes=('x',) axis_index_groups=None] a in (b,) }", "p");
            }),
            "p:2:14: psum over mesh axis 'x' outside any shard_map or pmap: no mesh names the axis");
  EXPECT_EQ(usage_error([] {
              parse_program(R"({ lambda ; a:f32[8]. let
    b:f32[8] = shard_map[check_vma=False in_specs=(P('x'),) jaxpr={ lambda ; c:f32[2]. let
        d:f32[2] = ppermute[axis_name=x perm=((0, 1), (2, 1))] c in (d,) } mesh=Mesh('x': 4) out_specs=(P('x'),)] a
  in (b,) })", "p");
            }),
            "p:3:20: ppermute's perm names destination 1 twice");
  EXPECT_EQ(usage_error([] {
              parse_program(R"({ lambda ; a:f32[8]. let
    b:f32[8] = shard_map[check_vma=False in_specs=(P('x'),) jaxpr={ lambda ; c:f32[2]. let
        d:f32[2] = all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=x axis_size=8 tiled=True] c
        e:f32[2] = slice[limit_indices=(2,) start_indices=(0,) strides=None] d in (e,) } mesh=Mesh('x': 4) out_specs=(P('x'),)] a
  in (b,) })", "p");
            }),
            "p:3:20: all_gather's axis_size=8 but its mesh axes have 4 devices");
  EXPECT_EQ(usage_error([] { parse_mesh_option("x=65536,y=65536", {"--mesh", 0, 0}); }),
            "--mesh: the mesh x=65536,y=65536 has more than 16777216 devices");
  EXPECT_EQ(usage_error([] { parse_mesh_option("data=2,model", {"--mesh", 0, 0}); }),
            "--mesh: expected NAME=SIZE, found 'model' (--mesh data=2,model=4)");
  EXPECT_EQ(usage_error([] { parse_mesh_option("data=0", {"--mesh", 0, 0}); }),
            "--mesh: mesh axis 'data' needs a positive size, found '0'");
}

// Every prefix of a sharded program, and the program with each character dropped, reads or is
// refused in one line: the new reprs (meshes, specs, names, tile assignments) crash nothing.
TEST(ShardedPrograms, EveryCutOfAProgramReadsOrIsRefused) {
  const std::string text = R"({ lambda ; a:f32[8,8] b:f32[8]. let
    c:f32[8,8] = sharding_constraint[resource_env=ResourceEnv(Mesh(device_ids=array([[0, 1],
       [2, 3]]), axis_names=('x', 'y')), ()) sharding=GSPMDSharding({devices=[2,1,2]<=[4] last_tile_dims={manual}}) unconstrained_dims=set()] a
    d:f32[8] = shard_map[auto=frozenset() check_rep=True in_names=({0: ('x',), 1: ('y',)}, {0: ('x', 'y')}) jaxpr={ lambda ; e:f32[4,4] f:f32[2]. let
        g:f32[4] = reduce_sum[axes=(1,)] e
        h:f32[4] = psum2[axes=('y',) axis_index_groups=None] g
        i:f32[2] = slice[limit_indices=(2,) start_indices=(0,) strides=None] h
        j:f32[2] = mul i f
      in (j,) } mesh=Mesh('x': 2, 'y': 2) out_names=({0: ('x', 'y')},) rewrite=True] c b
  in (d,) })";
  ASSERT_EQ(usage_error([&] { parse_program(text, "p"); }), "");
  for (size_t cut = 0; cut < text.size(); ++cut) {
    for (const std::string& variant : {text.substr(0, cut), text.substr(0, cut) + text.substr(cut + 1)}) {
      const std::string error = usage_error([&] { parse_program(variant, "p"); });
      EXPECT_EQ(error.rfind("internal", 0), std::string::npos) << cut << ": " << error;
    }
  }
}

// Devices that take different branches, one of which runs a collective, do not wait for each
// other forever: device 0 skips the psum and meets the others at the join of the result, which
// is not the collective they run.
TEST(ShardedPrograms, DevicesThatPartWaysAtACollectiveStopWithAnError) {
  const std::string error = usage_error([] {
    evaluate_f64(R"({ lambda ; a:f32[4]. let
      b:f32[4] = shard_map[check_vma=False in_specs=(P('x'),) jaxpr={ lambda ; c:f32[1]. let
          i:i32[] = axis_index[axis_name=x]
          j:i32[] = clamp 0:i32[] i 1:i32[]
          d:f32[1] = cond[branches=(
            { lambda ; e:f32[1]. let f:f32[1] = sin e in (f,) }
            { lambda ; e:f32[1]. let f:f32[1] = psum[axes=('x',) axis_index_groups=None] e in (f,) }
          )] j c
        in (d,) } mesh=Mesh('x': 4) out_specs=(P('x'),)] a
    in (b,) })",
                 {iota({4})});
  });
  EXPECT_EQ(error.rfind("the devices of the mesh disagree: device 0 runs shard_map_out[", 0), 0u) << error;
  EXPECT_NE(error.find("where device 1 runs psum[axes=('x',)"), std::string::npos) << error;
}

}  // namespace
}  // namespace rematkit::testing
