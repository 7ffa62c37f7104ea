// Which equations of a pass run as one fused kernel step. A fusion is a product (dot_general) or an
// elementwise equation followed by elementwise equations of the same output shape that read what
// it computes: a Dense layer's product, bias add and activation, a relu's output with its mask, the
// chain of a gelu; or, where a backend runs it, a tree: with the elementwise equations that compute
// a part's other operands (the two terms of a cross-entropy's cotangent and their sum); or a
// scatter-add into a spread scalar with the add that alone reads it (a tied embedding's two
// cotangents summed); or a product with the transpose that alone reads it. It is offered to backends as one "rk_fusion" equation
// (plugins/include/rematkit/plugin/fusion_view.hpp) only where the values between its parts are
// read nowhere else: no other equation of the pass, no readout, and no residual reads them. So
// fusion never changes what a policy keeps; the values it leaves out simply get no buffer, and the
// memory plan (built over the steps as they are) counts exactly that.
//
// Which backend runs it follows the user's preference list: the first backend that runs the fused
// equation, if that is the backend that runs its product alone (a product never moves to another
// backend to be fused), or, with no product, one that runs some part alone; and a part whose bits
// depend on the backend (a transcendental) only on the backend that runs it alone, so that every
// value has the same bits fused or not, under every policy. Where none does, the last part is
// dropped and the rest tried again; the dropped parts may start a fusion of their own.
#pragma once

#include <memory>
#include <set>
#include <vector>

#include "prepared_kernels.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit {

struct FusedStep {
  std::vector<int> eqns;                 // graph equations, in pass order; the step runs at the last one
  std::vector<ValueId> inputs, outputs;  // the fused equation's operands and results
  std::shared_ptr<const PreparedKernel> kernel;
};

struct PassFusion {
  std::vector<FusedStep> steps;
  // What the pass runs, in order: graph equation e on its own (e >= 0), or fused step i (-1 - i).
  std::vector<int> order;
};

// The fusions of `eqns`, one pass of `lin` whose readout reads `readout`; in the forward pass the
// residuals are read later too. Where !fuse or !kernels.backends().fuses(), every equation runs on
// its own; so does every equation of `held_apart` (graph equation numbers).
PassFusion fuse_pass(const Linearization& lin, const std::vector<int>& eqns, Pass pass,
                     const std::vector<ValueId>& readout, PreparedKernels& kernels, bool fuse,
                     const std::set<int>& held_apart);

}  // namespace rematkit
