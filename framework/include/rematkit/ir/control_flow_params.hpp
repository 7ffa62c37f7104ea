// The params of the control-flow primitives (scan, cond, while), read into structs: which
// sub-program runs, and how the operands split into consts, carries and stacked inputs.
// jax/_src/lax/control_flow/loops.py (scan_p, while_p) and conditionals.py (cond_p) define them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/params.hpp"

namespace rematkit {

struct Program;

// scan[jaxpr length num_consts num_carry reverse]: operands consts, carries, xs; outputs carries, ys.
struct ScanParams {
  std::shared_ptr<const Program> body;
  int64_t length = 0;
  size_t num_consts = 0;
  size_t num_carry = 0;
  bool reverse = false;
};

// while[cond_jaxpr cond_nconsts body_jaxpr body_nconsts]: operands cond consts, body consts, carries.
struct WhileParams {
  std::shared_ptr<const Program> cond, body;
  size_t cond_nconsts = 0;
  size_t body_nconsts = 0;
};

// Bad-input errors at `where` name the param (a missing one, a negative count).
REMATKIT_CORE_EXPORT ScanParams scan_params(const Params& params, const SourceLocation& where);
REMATKIT_CORE_EXPORT WhileParams while_params(const Params& params, const SourceLocation& where);
// cond's branches, in index order.
REMATKIT_CORE_EXPORT std::vector<std::shared_ptr<const Program>> cond_branches(const Params& params,
                                                                               const SourceLocation& where);
// Every sub-program an equation's params hold (a call's body, a loop's bodies, cond's branches).
REMATKIT_CORE_EXPORT std::vector<const Program*> sub_programs(const Params& params);

// scan's params as JAX prints them, for programs built in C++ (Flax's nn.scan).
REMATKIT_CORE_EXPORT Params scan_params_of(std::shared_ptr<const Program> body, int64_t length, size_t num_consts,
                                           size_t num_carry, bool reverse = false);

}  // namespace rematkit
