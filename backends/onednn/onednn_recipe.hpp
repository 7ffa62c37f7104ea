// How the oneDNN backend runs one equation: a primitive to build and the memory descriptors of its
// arguments. Shared by onednn_backend.cpp (matmul, eltwise, binary) and onednn_windows.cpp
// (convolutions and pooling).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rematkit/plugin/plugin.hpp"

namespace rematkit_onednn {

struct Recipe {
  std::string key;  // the primitive cache's: the operation, its shapes, strides and params
  std::vector<std::pair<int, dnnl::memory::desc>> inputs;  // (DNNL_ARG_*, desc) per equation input
  std::pair<int, dnnl::memory::desc> output;
  std::function<dnnl::primitive(const dnnl::engine&)> make;
  int64_t work = 0;  // multiply-adds of a matmul or convolution; 0: the output's elements
  // An input oneDNN reads rearranged (a backward-data convolution's kernel, reversed in space):
  // `stage` writes it from the input's buffer into the workspace before each run, and input
  // `staged` is read from there.
  int staged = -1;
  size_t workspace_bytes = 0;
  std::function<void(const void* input, void* workspace)> stage = nullptr;
};

// conv_general_dilated as a oneDNN convolution (forward, backward data or backward weights), and
// reduce_window_max/sum as pooling; false for an equation of another kind or one they do not fit.
// May throw where oneDNN refuses the descriptors (the caller declines the equation then).
bool convolution_recipe(const dnnl::engine& engine, const rk_equation_view* e, Recipe& r);
bool pooling_recipe(const dnnl::engine& engine, const rk_equation_view* e, Recipe& r);

}  // namespace rematkit_onednn
