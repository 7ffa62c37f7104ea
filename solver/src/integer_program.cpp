#include "integer_program.hpp"

#include "rematkit/error.hpp"

#ifdef REMATKIT_HAVE_CBC
#include <cfloat>

#include <coin/Cbc_C_Interface.h>
#endif

namespace rematkit::solver {

int IntegerProgram::add_binary(double cost) {
  columns_.push_back({0.0, 1.0, cost, true});
  return num_columns() - 1;
}

int IntegerProgram::add_continuous(double lower, double upper, double cost) {
  columns_.push_back({lower, upper, cost, false});
  return num_columns() - 1;
}

void IntegerProgram::add_row(const std::vector<std::pair<int, double>>& terms, double lower, double upper) {
  rows_.push_back({terms, lower, upper});
}

#ifdef REMATKIT_HAVE_CBC

bool IntegerProgram::available() { return true; }

IntegerProgram::Result IntegerProgram::minimize(double seconds) const {
  Cbc_Model* model = Cbc_newModel();
  for (const Column& c : columns_)
    Cbc_addCol(model, "", c.lower, c.upper == kUnbounded ? DBL_MAX : c.upper, c.cost, c.integer ? 1 : 0, 0,
               nullptr, nullptr);
  std::vector<int> cols;
  std::vector<double> coefs;
  for (const Row& r : rows_) {
    cols.clear();
    coefs.clear();
    for (const auto& [col, coef] : r.terms) cols.push_back(col), coefs.push_back(coef);
    // A ranged row as its one or two sides.
    if (r.lower != -kUnbounded && r.lower == r.upper) {
      Cbc_addRow(model, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), 'E', r.lower);
      continue;
    }
    if (r.lower != -kUnbounded) Cbc_addRow(model, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), 'G', r.lower);
    if (r.upper != kUnbounded) Cbc_addRow(model, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), 'L', r.upper);
  }
  if (!start_.empty()) {
    std::vector<int> idx;
    std::vector<double> val;
    for (const auto& [col, v] : start_) idx.push_back(col), val.push_back(v);
    Cbc_setMIPStartI(model, static_cast<int>(idx.size()), idx.data(), val.data());
  }
  Cbc_setLogLevel(model, 0);
  Cbc_setParameter(model, "timeMode", "elapsed");  // the limit is the user's wall clock, on a busy machine too
  Cbc_setAllowablePercentageGap(model, 100.0 * kRelativeGap);
  Cbc_setMaximumSeconds(model, seconds > 0.01 ? seconds : 0.01);
  Cbc_solve(model);
  Result result;
  result.infeasible = Cbc_isProvenInfeasible(model) != 0;
  const double* x = Cbc_bestSolution(model);
  if (x && !result.infeasible) {
    result.solved = true;
    result.x.assign(x, x + columns_.size());
    result.objective = Cbc_getObjValue(model);
    result.optimal = Cbc_isProvenOptimal(model) != 0;
  }
  result.bound = Cbc_getBestPossibleObjValue(model);
  Cbc_deleteModel(model);
  return result;
}

#else

bool IntegerProgram::available() { return false; }

IntegerProgram::Result IntegerProgram::minimize(double) const {
  internal_error("this rematkit was built without COIN-OR CBC (coinor-libcbc-dev): no exact solver");
}

#endif

}  // namespace rematkit::solver
