// Type rules of scan, cond and while: the outputs from the sub-programs' binders and results, after
// checking that the operands fit them. Internal to the IR; infer_types() dispatches here.
#pragma once
#include <vector>

#include "rematkit/ir/params.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit::ir {

std::vector<Type> scan_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where);
std::vector<Type> cond_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where);
std::vector<Type> while_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where);

}  // namespace rematkit::ir
