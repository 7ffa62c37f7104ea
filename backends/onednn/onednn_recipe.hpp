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
  // `staged` is read from there. The primitive's scratchpad follows these bytes in the workspace.
  int staged = -1;
  size_t workspace_bytes = 0;
  std::function<void(const void* input, void* workspace)> stage = nullptr;
  // An output oneDNN writes in a layout of its choosing (a backward-weights convolution's kernel
  // gradient, blocked): the primitive writes it at the workspace's start, and `unstage` reorders
  // it from there into the output's buffer after each run. Never together with `stage`.
  std::function<void(void* workspace, void* output)> unstage = nullptr;
};

// The attributes of every primitive the backend makes: oneDNN's scratchpad is the caller's (a part
// of the kernel's workspace, which the host places in its arena), never one oneDNN allocates.
dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr attr = {});
// What a primitive made with user_scratchpad() takes at DNNL_ARG_SCRATCHPAD (a zero desc: nothing).
dnnl::memory::desc scratchpad_desc(const dnnl::primitive& primitive);
// `bytes` rounded up to a cache line: where the next part of a workspace starts.
constexpr size_t cache_lines(size_t bytes) { return (bytes + 63) / 64 * 64; }
// Runs `primitive` on arguments made once (memories whose data handles the caller points at its
// buffers): through the C API, since the C++ execute() builds a vector of them on every call.
void execute(const dnnl::primitive& primitive, const dnnl::stream& stream, const std::vector<dnnl_exec_arg_t>& args);

// conv_general_dilated as a oneDNN convolution (forward, backward data or backward weights), and
// reduce_window_max/sum as pooling; false for an equation of another kind or one they do not fit.
// May throw where oneDNN refuses the descriptors (the caller declines the equation then).
bool convolution_recipe(const dnnl::engine& engine, const rk_equation_view* e, Recipe& r);
bool pooling_recipe(const dnnl::engine& engine, const rk_equation_view* e, Recipe& r);

}  // namespace rematkit_onednn
