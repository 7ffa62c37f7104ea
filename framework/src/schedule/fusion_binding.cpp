// Binding a fused equation to a backend: the first of the preference list that may run it (so that
// every value has the same bits fused or not) and prepares it.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "fusion_pass.hpp"
#include "rematkit/plugin/fusion_view.hpp"  // the fused equation's name, as backends read it

namespace rematkit::fusion {
namespace {

// Whether every backend computes the same bits for `e`: IEEE's correctly rounded operations, and
// those that only compare, select or move values. A transcendental (tanh, exp, rsqrt, ...) is each
// backend's own approximation: oneDNN's tanh and Highway's differ in the last bit; a reduction's
// sum depends on the order it adds in.
bool same_bits_on_every_backend(const FlatEquation& e) {
  const PrimFamily family = prim_family(e.prim);
  if (family == PrimFamily::kReduction) return false;  // each backend adds in its own order
  if (family != PrimFamily::kUnary && family != PrimFamily::kBinaryArithmetic) return true;
  static constexpr Prim kExact[] = {Prim::kAdd,      Prim::kSub,    Prim::kMul,          Prim::kDiv,  Prim::kMax,
                                    Prim::kMin,      Prim::kAddAny, Prim::kNeg,          Prim::kSqrt, Prim::kSquare,
                                    Prim::kStopGradient, Prim::kName, Prim::kRelu,       Prim::kAbs,  Prim::kSign,
                                    Prim::kFloor,    Prim::kCeil,   Prim::kIsFinite,     Prim::kNot,  Prim::kCopy,
                                    Prim::kConvertElementType};
  return std::find(std::begin(kExact), std::end(kExact), e.prim) != std::end(kExact);
}

Type device(Type t) {
  t.space = MemorySpace::kDevice;
  return t;
}

// The fused equation prepared on the backend the preference list allows, or nullptr.
std::unique_ptr<PreparedKernel> prepare_fused(const PassView& pass, const std::vector<size_t>& parts, const Params& params,
                                              const FusedStep& step, PreparedKernels& kernels) {
  const FlatGraph& g = pass.graph;
  BackendSet& backends = kernels.backends();
  std::vector<int> own;  // the backend each part runs on alone
  for (size_t q : parts) own.push_back(kernels.chosen(g, pass.eqn_at(q)));
  std::vector<Type> in, out;
  for (ValueId v : step.inputs) in.push_back(device(g.values[v].type));
  for (ValueId v : step.outputs) out.push_back(device(g.values[v].type));
  std::string what = "the fusion of";
  for (size_t j = 0; j < parts.size(); ++j)
    what += std::string(j ? " + " : " ") + std::string(prim_name(pass.eqn_at(parts[j]).prim));
  what += " at " + pass.eqn_at(parts.front()).where.str();
  const bool has_product = product(pass.eqn_at(parts.front()));
  for (size_t b = 0; b < backends.size(); ++b) {
    bool allowed = has_product ? own.front() == static_cast<int>(b)
                               : std::find(own.begin(), own.end(), static_cast<int>(b)) != own.end();
    // Bits follow the equation, not the fusion: a part whose bits depend on the backend is fused
    // only on the backend that runs it alone. Policies fuse differently (a kept value ends a
    // fusion; a recomputed chain fuses again), and each must give the baseline's gradients.
    for (size_t j = 0; j < parts.size() && allowed; ++j)
      allowed = own[j] == static_cast<int>(b) || same_bits_on_every_backend(pass.eqn_at(parts[j]));
    if (!allowed) {
      if (has_product && own.front() == static_cast<int>(b)) return nullptr;
      continue;
    }
    if (auto kernel = backends.backend(b).prepare(plugin::kFusionPrimitive, params, in, out, what)) return kernel;
    if (has_product) return nullptr;  // the product's own backend declined
  }
  return nullptr;
}

}  // namespace

bool bind_to_backend(const PassView& pass, const std::vector<size_t>& parts, const Params& params, FusedStep& step,
                     PreparedKernels& kernels) {
  step.kernel = kernels.fused(PreparedKernels::FusedKey{&pass.graph, step.eqns, step.inputs, step.outputs},
                              [&] { return prepare_fused(pass, parts, params, step, kernels); });
  return step.kernel != nullptr;
}

}  // namespace rematkit::fusion
