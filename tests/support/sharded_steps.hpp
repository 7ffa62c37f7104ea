// Training steps written as shard_map programs over a (data, fsdp) mesh, and the same model
// written whole, that more than one test runs: the interpreter's simulated mesh
// (collectives_test.cpp) and the step executors on a mesh (mesh_step_runner_test.cpp); and a
// program of every collective with what it gives each device.
#pragma once

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "rematkit/interpreter/tensor.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {

// A model of two layers, tanh(x W), as an FSDP step: x split over both axes of a (data, fsdp)
// mesh, each weight split over fsdp and gathered whole inside the layer's checkpoint, which a
// recomputation in the backward pass then gathers again.
inline constexpr const char* kFsdpStep = R"({ lambda ; x:f32[8,4] w1:f32[4,4] w2:f32[4,4]. let
    loss:f32[] = shard_map[check_vma=True in_specs=(P(('data', 'fsdp'),), P('fsdp',), P('fsdp',)) jaxpr={ lambda ; xb:f32[2,4]{V:(data,fsdp)} w1s:f32[2,4]{V:fsdp} w2s:f32[2,4]{V:fsdp}. let
        y1:f32[2,4]{V:(data,fsdp)} = checkpoint[jaxpr={ lambda ; p:f32[2,4] q:f32[2,4]. let
            qf:f32[4,4] = all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=('fsdp',) axis_size=2 tiled=True] q
            h:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p qf
            r:f32[2,4] = tanh h
          in (r,) } differentiated=True policy=POLICY prevent_cse=True] xb w1s
        y2:f32[2,4]{V:(data,fsdp)} = checkpoint[jaxpr={ lambda ; p:f32[2,4] q:f32[2,4]. let
            qf:f32[4,4] = all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=('fsdp',) axis_size=2 tiled=True] q
            h:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p qf
            r:f32[2,4] = tanh h
          in (r,) } differentiated=True policy=POLICY prevent_cse=True] y1 w2s
        s:f32[]{V:(data,fsdp)} = reduce_sum[axes=(0, 1)] y2
        t:f32[] = psum_invariant[axes=('data', 'fsdp')] s
      in (t,) } manual_axes=frozenset({'data', 'fsdp'}) mesh=Mesh('data': 2, 'fsdp': 2, axis_types=(Auto, Auto)) out_specs=(P(),)] x w1 w2
  in (loss,) })";

// The same as data parallel (JAX 0.4.x's form): the weights whole on every device, their
// gradients summed over the devices by the transpose of the split (no psum written).
inline constexpr const char* kDataParallelStep = R"({ lambda ; x:f32[8,4] w1:f32[4,4] w2:f32[4,4]. let
    loss:f32[] = shard_map[auto=frozenset() check_rep=False in_names=({0: ('data', 'fsdp')}, {}, {}) jaxpr={ lambda ; xb:f32[2,4] w1f:f32[4,4] w2f:f32[4,4]. let
        y1:f32[2,4] = checkpoint[jaxpr={ lambda ; p:f32[2,4] q:f32[4,4]. let
            h:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p q
            r:f32[2,4] = tanh h
          in (r,) } differentiated=True policy=POLICY prevent_cse=True] xb w1f
        y2:f32[2,4] = checkpoint[jaxpr={ lambda ; p:f32[2,4] q:f32[4,4]. let
            h:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p q
            r:f32[2,4] = tanh h
          in (r,) } differentiated=True policy=POLICY prevent_cse=True] y1 w2f
        s:f32[] = reduce_sum[axes=(0, 1)] y2
        t:f32[] = psum[axes=('data', 'fsdp') axis_index_groups=None] s
      in (t,) } mesh=Mesh('data': 2, 'fsdp': 2) out_names=({},) rewrite=False] x w1 w2
  in (loss,) })";

// Megatron's tensor parallelism over a mesh of 2 on 'tensor' (JAX 0.4.x's form): w1 split by
// columns, w2 by rows; layer 1 is column-parallel, layer 2 row-parallel, its partial products
// summed by a psum inside the checkpoint (so a recomputation sums them again). x is whole on
// each device; its gradient is summed over them by the transpose of the split.
inline constexpr const char* kTensorParallelStep = R"({ lambda ; x:f32[8,4] w1:f32[4,4] w2:f32[4,4]. let
    loss:f32[] = shard_map[auto=frozenset() check_rep=False in_names=({}, {1: ('tensor',)}, {0: ('tensor',)}) jaxpr={ lambda ; xb:f32[8,4] w1c:f32[4,2] w2r:f32[2,4]. let
        y:f32[8,4] = checkpoint[jaxpr={ lambda ; p:f32[8,4] q:f32[4,2] r:f32[2,4]. let
            h1:f32[8,2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] p q
            y1:f32[8,2] = tanh h1
            z:f32[8,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] y1 r
            h2:f32[8,4] = psum[axes=('tensor',) axis_index_groups=None] z
            y2:f32[8,4] = tanh h2
          in (y2,) } differentiated=True policy=POLICY prevent_cse=True] xb w1c w2r
        t:f32[] = reduce_sum[axes=(0, 1)] y
      in (t,) } mesh=Mesh('tensor': 2) out_names=({},) rewrite=False] x w1 w2
  in (loss,) })";

inline constexpr const char* kWholeModel = R"({ lambda ; x:f32[8,4] w1:f32[4,4] w2:f32[4,4]. let
    h1:f32[8,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] x w1
    y1:f32[8,4] = tanh h1
    h2:f32[8,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] y1 w2
    y2:f32[8,4] = tanh h2
    loss:f32[] = reduce_sum[axes=(0, 1)] y2
  in (loss,) })";

inline std::string with_policy(std::string text, const std::string& policy) {
  for (size_t at = text.find("POLICY"); at != std::string::npos; at = text.find("POLICY"))
    text.replace(at, 6, policy);
  return text;
}

inline Tensor iota(Shape shape) {
  std::vector<double> v(static_cast<size_t>(num_elements(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  return tensor_of(std::move(shape), std::move(v));
}

// Each collective on a mesh of 4 devices along x. Device d holds elements 2d and 2d+1 of
// a = [0, 1, ..., 7], and row d of b = iota [4, 4].
inline constexpr const char* kEveryCollective = R"({ lambda ; a:f32[8] b:f32[4,4]. let
      r0:f32[2] r1:f32[8] r2:f32[4] r3:f32[8] r4:f32[8] r5:f32[16,1] r6:f32[8] r7:f32[4] = shard_map[
        check_vma=False
        in_specs=(PartitionSpec('x',), PartitionSpec('x', None))
        jaxpr={ lambda ; c:f32[2] e:f32[1,4]. let
            s:f32[2] = psum[axes=('x',) axis_index_groups=None] c
            g:f32[8] = all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=x axis_size=4 tiled=True] c
            i:i32[] = axis_index[axis_name=x]
            fi:f32[] = convert_element_type[new_dtype=float32 weak_type=False] i
            i1:f32[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,)] fi
            p:f32[2] = ppermute[axis_name=x perm=((0, 1), (1, 2), (2, 3), (3, 0))] c
            rs:f32[2] = reduce_scatter[axis_index_groups=None axis_name=x axis_size=4 scatter_dimension=0 tiled=True] g
            t:f32[4,1] = all_to_all[axis_index_groups=None axis_name=x concat_axis=0 split_axis=1 tiled=True] e
            bc:f32[2] = pbroadcast[axis_name=x source=2] c
            m:i32[] = pmax[axes=('x',) axis_index_groups=None] i
            fm:f32[] = convert_element_type[new_dtype=float32 weak_type=False] m
            m1:f32[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,)] fm
          in (s, g, i1, p, rs, t, bc, m1) }
        mesh=Mesh('x': 4)
        out_specs=(PartitionSpec(), PartitionSpec(), PartitionSpec('x',), PartitionSpec('x',), PartitionSpec('x',),
                   PartitionSpec('x', None), PartitionSpec('x',), PartitionSpec('x',))
      ] a b
    in (r0, r1, r2, r3, r4, r5, r6, r7) })";

// What kEveryCollective gives on iota inputs, worked out by hand.
inline void expect_what_parallel_py_defines(const std::vector<Tensor>& out) {
  ASSERT_EQ(out.size(), 8u);
  EXPECT_EQ(out[0].data, (std::vector<double>{12, 16}));  // 0+2+4+6, 1+3+5+7 on every device
  EXPECT_EQ(out[1].data, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));  // every block, in device order
  EXPECT_EQ(out[2].data, (std::vector<double>{0, 1, 2, 3}));  // each device its index
  EXPECT_EQ(out[3].data, (std::vector<double>{6, 7, 0, 1, 2, 3, 4, 5}));  // device d has d-1's block
  // The gathered [0..7] is the same on the 4 devices: its sum 4 [0..7], device d its block d.
  EXPECT_EQ(out[4].data, (std::vector<double>{0, 4, 8, 12, 16, 20, 24, 28}));
  // Device d gets column d of b: block d of each device's row, joined in device order.
  EXPECT_EQ(out[5].data, (std::vector<double>{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}));
  EXPECT_EQ(out[6].data, (std::vector<double>{4, 5, 4, 5, 4, 5, 4, 5}));  // device 2's block everywhere
  EXPECT_EQ(out[7].data, (std::vector<double>{3, 3, 3, 3}));
}

}  // namespace rematkit::testing
