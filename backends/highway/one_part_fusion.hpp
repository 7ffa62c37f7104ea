// A single bf16 or f16 elementwise equation seen as an rk_fusion equation of one part
// (rematkit/plugin/fusion_view.hpp's form), so that the fused parts' code (fused_elementwise.hpp),
// which promotes, computes and rounds in segments, runs it alone too. SIMD-free.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "highway/equation.hpp"
#include "highway/primitive_ops.hpp"
#include "rematkit/plugin/fusion_view.hpp"

namespace rematkit::hwy_backend {

// A single equation as an rk_fusion equation of one part (rematkit/plugin/fusion_view.hpp's form):
// the part is the equation, with its params, and its result the fusion's one result. Points into
// itself and into the equation's view: valid while both live, where it was made.
class OnePartFusion {
 public:
  explicit OnePartFusion(const rk_equation_view* e) : view_(*e) {
    for (size_t i = 0; i < e->num_inputs; ++i) operands_.push_back(integer(nullptr, static_cast<int64_t>(i)));
    for (int32_t d = 0; d < e->outputs[0].rank; ++d) shape_.push_back(integer(nullptr, e->outputs[0].shape[d]));
    call_items_.assign(e->params, e->params + e->num_params);
    call_items_.push_back(list("operands", operands_));
    call_items_.push_back(integer("dtype", e->outputs[0].dtype));
    call_items_.push_back(list("shape", shape_));
    call_ = list(nullptr, call_items_);
    call_.string_value = e->primitive;
    result_ = integer(nullptr, static_cast<int64_t>(e->num_inputs));
    params_ = {list("parts", std::span(&call_, 1)), list("results", std::span(&result_, 1))};
    view_.primitive = plugin::kFusionPrimitive.data();
    view_.params = params_.data();
    view_.num_params = params_.size();
  }
  OnePartFusion(const OnePartFusion&) = delete;
  OnePartFusion& operator=(const OnePartFusion&) = delete;
  const rk_equation_view* view() const { return &view_; }

 private:
  static rk_value integer(const char* name, int64_t v) {
    rk_value x{};
    x.struct_size = sizeof(rk_value);
    x.kind = RK_VALUE_INT;
    x.name = name;
    x.int_value = v;
    return x;
  }
  static rk_value list(const char* name, std::span<const rk_value> items) {
    rk_value x{};
    x.struct_size = sizeof(rk_value);
    x.kind = RK_VALUE_LIST;
    x.name = name;
    x.items = items.data();
    x.num_items = items.size();
    return x;
  }
  rk_equation_view view_;
  std::vector<rk_value> operands_, shape_, call_items_;
  rk_value call_{}, result_{};
  std::array<rk_value, 2> params_{};
};

// A single elementwise equation with a bf16 or f16 operand or result, or a pow (which no other kind
// runs): those the parts' code runs.
inline bool runs_as_one_part(const Equation& eq) {
  if (!eq.prim) return false;
  const Prim p = *eq.prim;
  const bool elementwise = op_of(kUnaries, p) || op_of(kBinaries, p) || op_of(kCompares, p) || p == Prim::kSelectN ||
                           p == Prim::kIntegerPow || p == Prim::kConvertElementType || p == Prim::kClamp || p == Prim::kPow;
  const rk_equation_view* e = eq.view;
  auto half = [](const rk_type& t) { return t.dtype == RK_DTYPE_BF16 || t.dtype == RK_DTYPE_F16; };
  bool any_half = half(e->outputs[0]);
  for (size_t i = 0; i < e->num_inputs; ++i) any_half = any_half || half(e->inputs[i]);
  return elementwise && (any_half || p == Prim::kPow);
}

}  // namespace rematkit::hwy_backend
