#include "fusion_steps.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "rematkit/plugin/fusion_view.hpp"  // the fused equation's name, as backends read it
#include "rematkit/params.hpp"

namespace rematkit {
namespace {

// Parts in one fused equation at most, and how far ahead of its first part a fusion looks: a
// Dense layer with its activation and mask is 4 parts, a gelu about 10.
constexpr size_t kMaxParts = 16;
constexpr size_t kLookahead = 64;

bool elementwise(const FlatEquation& e) {
  if (e.scan || e.cond || e.outputs.size() != 1) return false;
  const PrimFamily family = prim_family(e.prim);
  return family == PrimFamily::kUnary || family == PrimFamily::kBinaryArithmetic ||
         family == PrimFamily::kComparison || family == PrimFamily::kSelect;
}

bool product(const FlatEquation& e) { return e.prim == Prim::kDotGeneral && !e.scan && !e.cond && e.outputs.size() == 1; }

// Whether every backend computes the same bits for `e`: IEEE's correctly rounded operations, and
// those that only compare, select or move values. A transcendental (tanh, exp, rsqrt, ...) is each
// backend's own approximation: oneDNN's tanh and Highway's differ in the last bit.
bool same_bits_on_every_backend(const FlatEquation& e) {
  const PrimFamily family = prim_family(e.prim);
  if (family != PrimFamily::kUnary && family != PrimFamily::kBinaryArithmetic) return true;
  static constexpr Prim kExact[] = {Prim::kAdd,      Prim::kSub,    Prim::kMul,          Prim::kDiv,  Prim::kMax,
                                    Prim::kMin,      Prim::kAddAny, Prim::kNeg,          Prim::kSqrt, Prim::kSquare,
                                    Prim::kStopGradient, Prim::kName, Prim::kRelu,       Prim::kAbs,  Prim::kSign,
                                    Prim::kFloor,    Prim::kCeil,   Prim::kIsFinite,     Prim::kNot,  Prim::kCopy,
                                    Prim::kConvertElementType};
  return std::find(std::begin(kExact), std::end(kExact), e.prim) != std::end(kExact);
}

ParamValue keyword(const std::string& name, ParamValue value) {
  ParamValue k;
  k.kind = ParamValue::Kind::kKeyword;
  k.text = name;
  k.items.push_back(std::move(value));
  return k;
}

class PassFuser {
 public:
  PassFuser(const Linearization& lin, const std::vector<int>& eqns, Pass pass, const std::vector<ValueId>& readout,
            BackendSet& backends)
      : lin_(lin), g_(lin.graph), eqns_(eqns), backends_(backends) {
    for (size_t p = 0; p < eqns_.size(); ++p) {
      const FlatEquation& e = g_.eqns[static_cast<size_t>(eqns_[p])];
      for (ValueId v : e.inputs) readers_[v].push_back(p);
      for (ValueId v : e.outputs) {
        if (++definitions_[v] > 1) unfusable_.insert(v);  // defined twice in one pass: left alone
        defined_at_[v] = p;
      }
    }
    for (ValueId v : readout)
      if (v != kNoValue) escapes_.insert(v);
    if (pass == Pass::kForward)
      for (const Residual& r : lin_.residuals) escapes_.insert(r.value);
  }

  PassFusion run() {
    PassFusion fusion;
    std::vector<int> at(eqns_.size(), kOnItsOwn);  // per position: the fused step it is part of, or kOnItsOwn
    if (backends_.fuses()) {
      for (size_t p = 0; p < eqns_.size(); ++p) {
        if (at[p] != kOnItsOwn) continue;
        const FlatEquation& seed = g_.eqns[static_cast<size_t>(eqns_[p])];
        if (!product(seed) && !elementwise(seed)) continue;
        auto fuse = [&](std::vector<size_t> parts) {
          for (; parts.size() >= 2; parts.pop_back()) {  // dropping the last part keeps the rest valid
            FusedStep step;
            const Params params = describe(parts, step);
            if (!bind(parts, params, step)) continue;
            for (size_t q : parts) at[q] = static_cast<int>(fusion.steps.size());
            fusion.steps.push_back(std::move(step));
            runs_at_.push_back(parts.back());
            return true;
          }
          return false;
        };
        // A backend may decline the spreads a fusion pulled in (rows too short for it): then the
        // chain fuses without them, reading their buffers.
        std::vector<size_t> parts = grow(p, at);
        if (!fuse(parts)) {
          std::erase_if(parts, [&](size_t q) { return q != p && eqn_at(q).prim == Prim::kBroadcastInDim; });
          fuse(parts);
        }
      }
    }
    // The pass in order: equations on their own where they are, each fused step where its last
    // part was.
    std::vector<std::pair<size_t, int>> items;
    for (size_t p = 0; p < eqns_.size(); ++p)
      if (at[p] == kOnItsOwn) items.push_back({p, eqns_[p]});
    for (size_t i = 0; i < fusion.steps.size(); ++i) items.push_back({runs_at_[i], -1 - static_cast<int>(i)});
    std::sort(items.begin(), items.end());
    for (const auto& item : items) fusion.order.push_back(item.second);
    return fusion;
  }

 private:
  const FlatEquation& eqn_at(size_t p) const { return g_.eqns[static_cast<size_t>(eqns_[p])]; }

  // The parts a fusion seeded at `first` may have: later elementwise equations of the seed's shape
  // that read what the fusion reads or computes, each kept only if the whole stays valid.
  std::vector<size_t> grow(size_t first, const std::vector<int>& taken) const {
    const std::vector<int64_t>& shape = g_.values[eqn_at(first).outputs[0]].type.shape;
    // A part's operands spread from a scalar (a relu's zeros) or from one value per row (a layer
    // norm's mean and scale, a softmax's max and sum) come along, from before the seed too (not
    // ahead of a product, which leads its fusion): then they fill a segment inside the kernel
    // instead of a whole buffer before it.
    auto with_spreads = [&](std::vector<size_t> grown, const FlatEquation& e) {
      for (ValueId v : e.inputs)
        if (auto d = defined_at_.find(v); d != defined_at_.end() && d->second != first &&
                                          (d->second > first || !product(eqn_at(first))) && taken[d->second] == kOnItsOwn &&
                                          spreads_over(eqn_at(d->second), shape) &&
                                          std::find(grown.begin(), grown.end(), d->second) == grown.end())
          grown.push_back(d->second);
      std::sort(grown.begin(), grown.end());
      return grown;
    };
    std::vector<size_t> parts{first};
    if (std::vector<size_t> grown = with_spreads(parts, eqn_at(first)); grown.size() > 1 && valid(grown)) parts = std::move(grown);
    for (size_t q = first + 1; q < eqns_.size() && q <= first + kLookahead && parts.size() < kMaxParts; ++q) {
      const FlatEquation& e = eqn_at(q);
      if (taken[q] != kOnItsOwn || !elementwise(e) || g_.values[e.outputs[0]].type.shape != shape)
        continue;
      if (!reads_any(e, parts)) continue;
      std::vector<size_t> grown = parts;
      grown.push_back(q);
      grown = with_spreads(std::move(grown), e);
      if (valid(grown)) parts = std::move(grown);
    }
    return parts;
  }

  // broadcast_in_dim to `shape` of one element, or of one per row (plugin::row_spread_trailing_dims).
  bool spreads_over(const FlatEquation& e, const std::vector<int64_t>& shape) const {
    if (e.prim != Prim::kBroadcastInDim || e.outputs.size() != 1 || e.inputs.size() != 1 ||
        g_.values[e.outputs[0]].type.shape != shape)
      return false;
    return g_.values[e.inputs[0]].type.num_elements() == 1 ||
           plugin::row_spread_trailing_dims(g_.values[e.inputs[0]].type.shape,
                                            param_ints(e.params, "broadcast_dimensions", e.where), shape) > 0;
  }

  // Whether `e` reads a value of the fusion, or an operand of the fusion's shape that a part reads
  // too (a relu and its mask both read the pre-activation: one pass over it instead of two).
  bool reads_any(const FlatEquation& e, const std::vector<size_t>& parts) const {
    const std::vector<int64_t>& shape = g_.values[e.outputs[0]].type.shape;
    auto reads = [&](ValueId v) { return std::find(e.inputs.begin(), e.inputs.end(), v) != e.inputs.end(); };
    for (size_t q : parts) {
      for (ValueId v : eqn_at(q).outputs)
        if (reads(v)) return true;
      for (ValueId v : eqn_at(q).inputs)
        if (reads(v) && g_.values[v].type.shape == shape) return true;
    }
    return false;
  }

  // The fused step runs where its last part was: every equation outside it that reads one of its
  // values must come after that, and no value it defines may be defined twice in the pass.
  bool valid(const std::vector<size_t>& parts) const {
    const size_t last = parts.back();
    for (size_t q : parts)
      for (ValueId v : eqn_at(q).outputs) {
        if (unfusable_.count(v)) return false;
        if (auto it = readers_.find(v); it != readers_.end())
          for (size_t r : it->second)
            if (r < last && std::find(parts.begin(), parts.end(), r) == parts.end()) return false;
      }
    return true;
  }

  // The step's operands (values defined outside the fusion, once each, in the order first read)
  // and results (values defined inside that something outside reads); returns the rk_fusion
  // equation's params.
  Params describe(const std::vector<size_t>& parts, FusedStep& step) const {
    std::map<ValueId, int64_t> number;  // value -> its number in the fused equation
    std::set<ValueId> defined;
    for (size_t q : parts)
      for (ValueId v : eqn_at(q).outputs) defined.insert(v);
    for (size_t q : parts)
      for (ValueId v : eqn_at(q).inputs)
        if (!defined.count(v) && !number.count(v)) {
          number[v] = static_cast<int64_t>(step.inputs.size());
          step.inputs.push_back(v);
        }
    ParamValue calls = ParamValue::of_tuple({});
    for (size_t j = 0; j < parts.size(); ++j) {
      const FlatEquation& e = eqn_at(parts[j]);
      step.eqns.push_back(eqns_[parts[j]]);
      number[e.outputs[0]] = static_cast<int64_t>(step.inputs.size() + j);
      std::vector<int64_t> operands;
      for (ValueId v : e.inputs) operands.push_back(number.at(v));
      const Type& type = g_.values[e.outputs[0]].type;
      ParamValue call;
      call.kind = ParamValue::Kind::kCall;
      call.text = std::string(prim_name(e.prim));
      call.items.push_back(keyword("operands", ParamValue::of_ints(operands)));
      call.items.push_back(keyword("dtype", ParamValue::of_int(dtype_code(type.dtype))));
      call.items.push_back(keyword("shape", ParamValue::of_ints(type.shape)));
      for (const auto& [key, value] : e.params.entries) call.items.push_back(keyword(key, value));
      calls.items.push_back(std::move(call));
    }
    std::vector<int64_t> results;
    for (size_t q : parts) {
      const ValueId v = eqn_at(q).outputs[0];
      if (!read_outside(v, parts)) continue;
      results.push_back(number.at(v));
      step.outputs.push_back(v);
    }
    Params params;
    params.set("parts", std::move(calls));
    params.set("results", ParamValue::of_ints(results));
    return params;
  }

  bool read_outside(ValueId v, const std::vector<size_t>& parts) const {
    if (escapes_.count(v)) return true;
    if (auto it = readers_.find(v); it != readers_.end())
      for (size_t r : it->second)
        if (std::find(parts.begin(), parts.end(), r) == parts.end()) return true;
    return false;
  }

  // The fused equation prepared on the backend the preference list allows (see the header), or false.
  bool bind(const std::vector<size_t>& parts, const Params& params, FusedStep& step) {
    std::vector<int> own;  // the backend each part runs on alone
    for (size_t q : parts) own.push_back(backends_.chosen(g_, eqn_at(q)));
    std::vector<Type> in, out;
    for (ValueId v : step.inputs) in.push_back(device(g_.values[v].type));
    for (ValueId v : step.outputs) out.push_back(device(g_.values[v].type));
    std::string what = "the fusion of";
    for (size_t j = 0; j < parts.size(); ++j) what += std::string(j ? " + " : " ") + std::string(prim_name(eqn_at(parts[j]).prim));
    what += " at " + eqn_at(parts.front()).where.str();
    const bool has_product = product(eqn_at(parts.front()));
    for (size_t b = 0; b < backends_.size(); ++b) {
      bool allowed = has_product ? own.front() == static_cast<int>(b)
                                 : std::find(own.begin(), own.end(), static_cast<int>(b)) != own.end();
      // Bits follow the equation, not the fusion: a part whose bits depend on the backend is fused
      // only on the backend that runs it alone. Policies fuse differently (a kept value ends a
      // fusion; a recomputed chain fuses again), and each must give the baseline's gradients.
      for (size_t j = 0; j < parts.size() && allowed; ++j)
        allowed = own[j] == static_cast<int>(b) || same_bits_on_every_backend(eqn_at(parts[j]));
      if (!allowed) {
        if (has_product && own.front() == static_cast<int>(b)) return false;
        continue;
      }
      if (auto kernel = backends_.backend(b).prepare(plugin::kFusionPrimitive, params, in, out, what)) {
        step.kernel = std::move(kernel);
        return true;
      }
      if (has_product) return false;  // the product's own backend declined
    }
    return false;
  }

  static Type device(Type t) {
    t.space = MemorySpace::kDevice;
    return t;
  }

  const Linearization& lin_;
  const FlatGraph& g_;
  const std::vector<int>& eqns_;
  BackendSet& backends_;
  std::map<ValueId, std::vector<size_t>> readers_;  // value -> positions in the pass that read it
  std::map<ValueId, int> definitions_;
  std::map<ValueId, size_t> defined_at_;  // value -> the position in the pass that defines it
  std::set<ValueId> unfusable_, escapes_;
  static constexpr int kOnItsOwn = -1;
  std::vector<size_t> runs_at_;             // per fused step: the position of its last part, where it runs
};

}  // namespace

PassFusion fuse_pass(const Linearization& lin, const std::vector<int>& eqns, Pass pass,
                     const std::vector<ValueId>& readout, BackendSet& backends) {
  return PassFuser(lin, eqns, pass, readout, backends).run();
}

}  // namespace rematkit
