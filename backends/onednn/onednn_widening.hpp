// bf16 and f16 on oneDNN 2.6 where it has no kernel for them (CPUs without AVX512_BF16): operands
// widened into f32 copies in the kernel's workspace, the f32 primitive run on them, and a bf16 or
// f16 result rounded back as the reference math stores it (element_values.hpp: to nearest even, a
// NaN kept quiet). XLA:CPU's semantics for products and convolutions: f32 accumulation, one
// rounding on store. Used by the products (onednn_products.cpp) and the convolutions
// (onednn_windows.cpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "onednn_half_copies.hpp"
#include "onednn_recipe.hpp"

namespace rematkit_onednn {

inline bool is_half(int32_t dtype) { return dtype == RK_DTYPE_BF16 || dtype == RK_DTYPE_F16; }

// onednn_half_copies.hpp's loops, split over the kernel's OpenMP team in chunks from
// `parallel_from` elements. A short one enters no parallel region: OpenMP's `if` still makes a team
// of one, which costs more than a short row (onednn_blocked_products.cpp widens row by row).
inline constexpr int64_t kParallelElements = int64_t{1} << 16;
// widen_recipe's copies, of a convolution's operands and results or a small product's, split only
// from here: on two threads the CNN's (131k to 262k elements) ran faster whole on one thread than
// split around oneDNN's own regions (docs/performance.md, "bf16 against f32").
inline constexpr int64_t kRecipeParallelElements = int64_t{1} << 20;
inline constexpr int64_t kChunkElements = int64_t{1} << 14;

template <class F>
void in_chunks(int64_t n, int64_t parallel_from, F copy) {
  if (n < parallel_from) {
    copy(0, n);
    return;
  }
  const int64_t chunks = (n + kChunkElements - 1) / kChunkElements;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) copy(c * kChunkElements, std::min(n, (c + 1) * kChunkElements));
}

inline void widen(const void* from, int32_t dtype, int64_t n, float* to, int64_t parallel_from = kParallelElements) {
  const auto* h = static_cast<const uint16_t*>(from);
  const bool f16 = dtype == RK_DTYPE_F16;
  in_chunks(n, parallel_from, [&](int64_t begin, int64_t end) {
    widen_lanes(f16, h + begin, to + begin, static_cast<size_t>(end - begin));
  });
}

inline void narrow(const float* from, int32_t dtype, int64_t n, void* to, int64_t parallel_from = kParallelElements) {
  auto* h = static_cast<uint16_t*>(to);
  const bool f16 = dtype == RK_DTYPE_F16;
  in_chunks(n, parallel_from, [&](int64_t begin, int64_t end) {
    narrow_lanes(f16, from + begin, h + begin, static_cast<size_t>(end - begin));
  });
}

inline int64_t elements(const rk_type& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

// An equation with every bf16 and f16 operand and result read as f32: what the f32 recipes are
// asked for. Valid while the equation it views lives.
class F32Equation {
 public:
  explicit F32Equation(const rk_equation_view* e)
      : view_(*e), inputs_(e->inputs, e->inputs + e->num_inputs), outputs_(e->outputs, e->outputs + e->num_outputs) {
    for (std::vector<rk_type>* types : {&inputs_, &outputs_})
      for (rk_type& t : *types)
        if (is_half(t.dtype)) t.dtype = RK_DTYPE_F32;
    view_.inputs = inputs_.data();
    view_.outputs = outputs_.data();
  }
  F32Equation(const F32Equation&) = delete;
  F32Equation& operator=(const F32Equation&) = delete;
  const rk_equation_view* get() const { return &view_; }

 private:
  rk_equation_view view_;
  std::vector<rk_type> inputs_, outputs_;
};

// Whether `e` has a bf16 or f16 operand or result, one output, and nothing but f32 beside them.
inline bool has_half_and_f32_only(const rk_equation_view* e) {
  bool half = false;
  for (size_t i = 0; i < e->num_inputs + e->num_outputs; ++i) {
    const int32_t dtype = i < e->num_inputs ? e->inputs[i].dtype : e->outputs[i - e->num_inputs].dtype;
    if (!is_half(dtype) && dtype != RK_DTYPE_F32) return false;
    half = half || is_half(dtype);
  }
  return half && e->num_outputs == 1;
}

// `r`, an f32 recipe for F32Equation(e), made to run `e`: each bf16/f16 input widened first into
// the workspace (where the primitive reads it, or the recipe's own stage does), `r`'s workspace
// after those copies, and a bf16/f16 result written in f32 after it and rounded into the output.
inline void widen_recipe(const rk_equation_view* e, Recipe& r) {
  size_t bytes = 0;
  auto place = [&](size_t part) {
    const size_t at = bytes;
    bytes = cache_lines(bytes + part);
    return at;
  };
  struct Copy {
    int input;
    int32_t dtype;
    int64_t elements;
    size_t at;
  };
  std::vector<Copy> copies;
  for (size_t i = 0; i < e->num_inputs; ++i)
    if (is_half(e->inputs[i].dtype))
      copies.push_back({static_cast<int>(i), e->inputs[i].dtype, elements(e->inputs[i]),
                        place(static_cast<size_t>(elements(e->inputs[i])) * sizeof(float))});
  const size_t inner = place(r.workspace_bytes);  // the f32 recipe's own workspace
  std::vector<Recipe::Staged> staged;
  for (const Copy& c : copies) {
    bool restaged = false;  // the f32 recipe stages this input itself, from the widened copy
    for (const Recipe::Staged& s : r.staged) restaged = restaged || s.input == c.input;
    if (!restaged) staged.push_back({c.input, c.at});
  }
  for (const Recipe::Staged& s : r.staged) staged.push_back({s.input, inner + s.at});
  // The inputs as the f32 recipe's stage reads them: the widened copies in place of the half ones.
  // Shared by the runs of one kernel, which are one at a time.
  auto views = std::make_shared<std::vector<rk_tensor_view>>(e->num_inputs);
  auto inner_stage = r.stage;
  r.stage = [copies, views, inner_stage, inner](const rk_tensor_view* inputs, std::byte* workspace) {
    std::copy(inputs, inputs + views->size(), views->begin());
    for (const Copy& c : copies) {
      widen(inputs[c.input].data, c.dtype, c.elements, reinterpret_cast<float*>(workspace + c.at), kRecipeParallelElements);
      (*views)[static_cast<size_t>(c.input)].data = workspace + c.at;
    }
    if (inner_stage) inner_stage(views->data(), workspace + inner);
  };
  r.staged = staged;
  const int32_t out = e->outputs[0].dtype;
  if (is_half(out)) {
    const int64_t n = elements(e->outputs[0]);
    const size_t f32_result = place(static_cast<size_t>(n) * sizeof(float));
    auto inner_unstage = r.unstage;
    r.result_at = inner_unstage ? inner + r.result_at : f32_result;
    r.unstage = [inner_unstage, inner, f32_result, out, n](std::byte* workspace, void* output) {
      if (inner_unstage) inner_unstage(workspace + inner, workspace + f32_result);
      narrow(reinterpret_cast<const float*>(workspace + f32_result), out, n, output, kRecipeParallelElements);
    };
  } else if (r.unstage) {
    auto inner_unstage = r.unstage;
    r.result_at += inner;
    r.unstage = [inner_unstage, inner](std::byte* workspace, void* output) { inner_unstage(workspace + inner, output); };
  }
  r.workspace_bytes = bytes;
}

}  // namespace rematkit_onednn
