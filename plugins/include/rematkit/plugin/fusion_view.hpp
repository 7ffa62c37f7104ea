// Reading a fused equation (docs/plugin-abi.md, "Fused equations"): the host offers a backend
// several equations of a pass as one, under the primitive name "rk_fusion", when the values between
// them are read nowhere else. A backend that runs it saves the passes over memory between them; one
// that does not know the name declines it (supports() returns 0) and the host runs the parts one by
// one, so older backends keep working. Header-only, C++17, on the C ABI alone.
//
// Params of an rk_fusion equation:
//   parts:   a list, one item per part in the order they run: a keyword call named by the part's
//            primitive ("dot_general", "add", "relu", ...) whose named items are the part's own params
//            plus operands (ints), dtype (an rk_dtype) and shape (ints), the part's result type.
//   results: ints, the values that are the equation's outputs, in output order.
//   (ABI 1.6's in_place, a result written over an input, is no longer sent; a fusion with it is
//   declined.)
// Values are numbered: the equation's inputs 0 .. num_inputs-1, then part j's result num_inputs + j.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/plugin/plugin.hpp"

namespace rematkit::plugin {

inline constexpr std::string_view kFusionPrimitive = "rk_fusion";

// The output dims a broadcast_in_dim from `in` to `out` (broadcast_dimensions `dims`) spreads one
// value over when it spreads one value per row: the operand's dims other than 1 are the output's
// leading ones, in order ([B, S] or [B, S, 1] to [B, S, D]: 1, the last). 0 when it is not such a
// spread. The host fuses these spreads into the chains that read them; a backend reads the operand
// at element i / (the size of those trailing dims).
inline size_t row_spread_trailing_dims(const std::vector<int64_t>& in, const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& out) {
  if (dims.size() != in.size()) return 0;
  size_t next = 0;  // the output dim the next operand dim other than 1 must be
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == 1) continue;
    if (dims[i] != static_cast<int64_t>(next) || next >= out.size() || in[i] != out[next]) return 0;
    ++next;
  }
  return next == 0 || next >= out.size() ? 0 : out.size() - next;
}

struct FusedPart {
  std::string primitive;
  std::optional<Prim> prim;          // nullopt: a primitive this SDK does not know (decline)
  std::vector<rk_value> params;      // the part's own params; they point into the view (valid for the call)
  std::vector<int64_t> operands;     // value numbers
  int32_t dtype = RK_DTYPE_F32;      // the result's
  std::vector<int64_t> shape;
};

// A fused equation's parts, and views of each part as an equation on its own, so that code written
// for single equations (a backend's choose-a-kernel) reads them unchanged.
class Fusion {
 public:
  // The parts of `eqn` when it is an rk_fusion equation the host built well; nullopt otherwise.
  static std::optional<Fusion> of(const rk_equation_view* eqn) {
    if (eqn->primitive == nullptr || std::string_view(eqn->primitive) != kFusionPrimitive) return std::nullopt;
    const rk_value* parts = find_param(eqn, "parts");
    const rk_value* results = find_param(eqn, "results");
    if (!parts || !results || parts->kind != RK_VALUE_LIST) return std::nullopt;
    Fusion f;
    f.num_inputs_ = eqn->num_inputs;
    for (size_t i = 0; i < eqn->num_inputs; ++i) {
      f.input_dtypes_.push_back(eqn->inputs[i].dtype);
      f.input_shapes_.emplace_back(eqn->inputs[i].shape, eqn->inputs[i].shape + eqn->inputs[i].rank);
    }
    for (size_t j = 0; j < parts->num_items; ++j) {
      const rk_value& call = parts->items[j];
      if (call.kind != RK_VALUE_LIST || call.string_value == nullptr) return std::nullopt;
      FusedPart part;
      part.primitive = call.string_value;
      part.prim = lookup_prim(part.primitive);
      bool typed = false, has_operands = false;
      for (size_t i = 0; i < call.num_items; ++i) {
        const rk_value& item = call.items[i];
        const std::string_view name = item.name ? item.name : "";
        if (name == "operands") part.operands = ints_of(item), has_operands = true;
        else if (name == "dtype" && item.kind == RK_VALUE_INT) part.dtype = static_cast<int32_t>(item.int_value), typed = true;
        else if (name == "shape") part.shape = ints_of(item);
        else part.params.push_back(item);
      }
      if (!typed || !has_operands) return std::nullopt;
      for (int64_t v : part.operands)
        if (v < 0 || v >= static_cast<int64_t>(f.num_inputs_ + j)) return std::nullopt;  // only earlier values
      f.parts_.push_back(std::move(part));
    }
    f.results_ = ints_of(*results);
    if (f.results_.size() != eqn->num_outputs || f.parts_.empty()) return std::nullopt;
    for (int64_t v : f.results_)
      if (v < static_cast<int64_t>(f.num_inputs_) || v >= static_cast<int64_t>(f.num_values())) return std::nullopt;
    // ABI 1.6's in_place (a result written over an input: a training step's fused SGD update),
    // which no host sends since 1.7: declined rather than run as if the buffers were apart.
    if (find_param(eqn, "in_place")) return std::nullopt;
    return f;
  }

  size_t num_inputs() const { return num_inputs_; }
  size_t num_values() const { return num_inputs_ + parts_.size(); }
  const std::vector<FusedPart>& parts() const { return parts_; }
  const std::vector<int64_t>& results() const { return results_; }
  // Value v's dtype and shape.
  int32_t dtype(int64_t v) const {
    return v < static_cast<int64_t>(num_inputs_) ? input_dtypes_[static_cast<size_t>(v)] : part_of(v).dtype;
  }
  const std::vector<int64_t>& shape(int64_t v) const {
    return v < static_cast<int64_t>(num_inputs_) ? input_shapes_[static_cast<size_t>(v)] : part_of(v).shape;
  }
  // How many parts read value v, and whether it is a result.
  size_t readers(int64_t v) const {
    size_t n = 0;
    for (const FusedPart& p : parts_)
      for (int64_t o : p.operands) n += o == v ? 1 : 0;
    return n;
  }
  bool is_result(int64_t v) const {
    for (int64_t r : results_)
      if (r == v) return true;
    return false;
  }
  // Part j as an equation of its own; valid while this Fusion and the view it came from live.
  class PartEquation {
   public:
    const rk_equation_view* get() const {  // pointed here, not where it was made: it may have moved
      view_.inputs = inputs_.data();
      view_.num_inputs = inputs_.size();
      view_.outputs = &output_;
      view_.num_outputs = 1;
      return &view_;
    }

   private:
    friend class Fusion;
    std::vector<rk_type> inputs_;
    rk_type output_{};
    mutable rk_equation_view view_{};
  };
  PartEquation part_equation(size_t j) const {
    const FusedPart& p = parts_[j];
    PartEquation e;
    for (int64_t v : p.operands) e.inputs_.push_back(type_view(v));
    e.output_ = type_view(static_cast<int64_t>(num_inputs_ + j));
    e.view_.struct_size = RK_STRUCT_SIZE(rk_equation_view, outputs);
    e.view_.primitive = p.primitive.c_str();
    e.view_.params = p.params.data();
    e.view_.num_params = p.params.size();
    return e;
  }

 private:
  const FusedPart& part_of(int64_t v) const { return parts_[static_cast<size_t>(v) - num_inputs_]; }
  rk_type type_view(int64_t v) const {
    const std::vector<int64_t>& s = shape(v);
    return rk_type{sizeof(rk_type), dtype(v), RK_MEMORY_DEVICE, static_cast<int32_t>(s.size()), s.data()};
  }

  size_t num_inputs_ = 0;
  std::vector<int32_t> input_dtypes_;
  std::vector<std::vector<int64_t>> input_shapes_;
  std::vector<FusedPart> parts_;
  std::vector<int64_t> results_;
};

}  // namespace rematkit::plugin
