// An equation as the Highway backend's kernel kinds read it: whether it is fused, its primitive and
// its output's shape, read once for all the kinds the list (kernel_list.cpp) offers it to. SIMD-free.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "rematkit/plugin/fusion_view.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace rematkit::hwy_backend {

using Dims = std::vector<int64_t>;

// The highest rank this backend runs (higher ones go to the next backend): kernels count
// coordinates in arrays of this size on the stack, so a run allocates nothing.
constexpr size_t kMaxRank = 16;
using Index = std::array<int64_t, kMaxRank>;

inline Dims shape_of(const rk_type& t) { return Dims(t.shape, t.shape + t.rank); }

inline size_t count(const Dims& d) {
  size_t n = 1;
  for (int64_t x : d) n *= static_cast<size_t>(x);
  return n;
}
inline size_t count(const rk_type& t) {
  size_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i) n *= static_cast<size_t>(t.shape[i]);
  return n;
}

struct Equation {
  const rk_equation_view* view = nullptr;
  std::optional<plugin::Fusion> fusion;  // its parts, when it is a fused equation
  // A single equation's primitive: nullopt for a fused one, and for one with a primitive the SDK
  // does not know, more than one output, or an operand of rank above kMaxRank, which every
  // single-equation kind declines.
  std::optional<Prim> prim;
  Dims out;             // a single equation's output shape
  bool all_f32 = false;  // whether every operand and result of a single equation is f32

  static Equation of(const rk_equation_view* e) {
    Equation eq;
    eq.view = e;
    eq.fusion = plugin::Fusion::of(e);
    if (eq.fusion) return eq;
    const std::optional<Prim> prim = plugin::primitive_of(e);
    if (e->num_outputs != 1 || !prim) return eq;
    for (size_t i = 0; i < e->num_inputs; ++i)
      if (static_cast<size_t>(e->inputs[i].rank) > kMaxRank) return eq;
    if (static_cast<size_t>(e->outputs[0].rank) > kMaxRank) return eq;
    eq.prim = prim;
    eq.out = shape_of(e->outputs[0]);
    eq.all_f32 = true;
    for (size_t i = 0; i < e->num_inputs; ++i) eq.all_f32 = eq.all_f32 && e->inputs[i].dtype == RK_DTYPE_F32;
    eq.all_f32 = eq.all_f32 && e->outputs[0].dtype == RK_DTYPE_F32;
    return eq;
  }
  // Whether it is a single equation of primitive p.
  bool is(Prim p) const { return prim == p; }
};

// A run's buffer as f32 (or any 4-byte dtype's bits, where a kernel only moves them).
inline float* f32(const rk_tensor_view& t) { return static_cast<float*>(t.data); }

}  // namespace rematkit::hwy_backend
