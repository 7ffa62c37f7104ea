// How the oneDNN backend runs one equation: a primitive to build and the memory descriptors of its
// arguments. Shared by onednn_backend.cpp (matmul, eltwise, binary) and onednn_windows.cpp
// (convolutions and pooling).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
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
  // Inputs oneDNN reads rearranged (a backward-data convolution's kernel, reversed in space; a
  // bf16 product's operands widened to f32): `stage` writes them from the inputs' buffers into the
  // workspace before each run, and each input of `staged` is read from its place there. The
  // primitive's scratchpad follows these bytes in the workspace.
  struct Staged {
    int input;
    size_t at;  // bytes from the workspace's start
  };
  std::vector<Staged> staged = {};
  size_t workspace_bytes = 0;
  std::function<void(const rk_tensor_view* inputs, std::byte* workspace)> stage = nullptr;
  // An output oneDNN writes in another layout or dtype (a backward-weights convolution's kernel
  // gradient, blocked; a bf16 product's f32 result): the primitive writes it at byte `result_at`
  // of the workspace, and `unstage` writes the output's buffer from it after each run.
  size_t result_at = 0;
  std::function<void(std::byte* workspace, void* output)> unstage = nullptr;
  // A product run in blocks, several primitives one after another (onednn_blocked_products.hpp):
  // where set, prepare() calls it in place of making `make`'s primitive, and execute() runs what it
  // returns on the inputs, the workspace (`workspace_bytes`, its scratchpads included) and the output.
  using Run = std::function<void(const rk_tensor_view* inputs, std::byte* workspace, void* output)>;
  std::function<Run(const dnnl::engine&)> make_run = nullptr;
};

// The primitive cache's key: an operation's name and its lists of dims (shapes, strides, params).
inline std::string key_of(const std::string& op, std::initializer_list<const dnnl::memory::dims*> parts) {
  std::string k = op;
  for (const dnnl::memory::dims* d : parts) {
    k += ";";
    for (int64_t x : *d) k += std::to_string(x) + ",";
  }
  return k;
}

// The attributes of every primitive the backend makes: oneDNN's scratchpad is the caller's (a part
// of the kernel's workspace, which the host places in its arena), never one oneDNN allocates.
dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr attr = {});
// What a primitive made with user_scratchpad() takes at DNNL_ARG_SCRATCHPAD (a zero desc: nothing).
dnnl::memory::desc scratchpad_desc(const dnnl::primitive& primitive);
// `bytes` rounded up to a cache line: where the next part of a workspace starts.
constexpr size_t cache_lines(size_t bytes) { return (bytes + 63) / 64 * 64; }

// The elements of a tensor of these dims.
int64_t count(const dnnl::memory::dims& dims);
// Runs `primitive` on arguments made once (memories whose data handles the caller points at its
// buffers): through the C API, since the C++ execute() builds a vector of them on every call.
void execute(const dnnl::primitive& primitive, const dnnl::stream& stream, const std::vector<dnnl_exec_arg_t>& args);

// A oneDNN reorder from `from` to `to`, made once with its memories and stream: a run only points
// them at the buffers (`scratchpad` after `scratchpad_bytes()` of the caller's), as the kernel runs
// one execute at a time, so they are never shared by two.
class Reordering {
 public:
  Reordering(const dnnl::engine& engine, const dnnl::memory::desc& from, const dnnl::memory::desc& to)
      : reorder_(dnnl::reorder::primitive_desc(engine, from, engine, to, user_scratchpad())),
        from_(from, engine, nullptr),
        to_(to, engine, nullptr),
        stream_(engine) {
    const dnnl::memory::desc scratchpad = scratchpad_desc(reorder_);
    args_ = {{DNNL_ARG_FROM, from_.get()}, {DNNL_ARG_TO, to_.get()}};
    if (scratchpad.get_size()) {
      scratch_ = dnnl::memory(scratchpad, engine, nullptr);
      args_.push_back({DNNL_ARG_SCRATCHPAD, scratch_.get()});
    }
  }
  size_t scratchpad_bytes() const { return scratch_ ? scratch_.get_desc().get_size() : 0; }
  void run(const void* from, void* to, void* scratchpad) {
    from_.set_data_handle(const_cast<void*>(from));
    to_.set_data_handle(to);
    if (scratch_) scratch_.set_data_handle(scratchpad);
    execute(reorder_, stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::reorder reorder_;
  dnnl::memory from_, to_, scratch_;
  dnnl::stream stream_;
  std::vector<dnnl_exec_arg_t> args_;
};

// conv_general_dilated as a oneDNN convolution (forward, backward data or backward weights), f32,
// or bf16 with a bf16 or f32 result when `native_bf16` (the CPU multiplies bf16), and
// reduce_window_max/sum as pooling; false for an equation of another kind or one they do not fit.
// May throw where oneDNN refuses the descriptors (the caller declines the equation then).
bool convolution_recipe(const dnnl::engine& engine, const rk_equation_view* e, bool native_bf16, Recipe& r);
bool pooling_recipe(const dnnl::engine& engine, const rk_equation_view* e, Recipe& r);

}  // namespace rematkit_onednn
