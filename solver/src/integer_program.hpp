// A small mixed-integer linear program, minimized by COIN-OR CBC (Debian's coinor-libcbc-dev)
// when rematkit was built with it. Columns are 0-1 or bounded continuous; rows are lo <= a.x <= hi.
#pragma once

#include <limits>
#include <utility>
#include <vector>

namespace rematkit::solver {

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();
// How close to the bound an answer must be to count as optimal: 0.1%. Layers that are alike make
// the search symmetric, and proving the last fraction of a percent is where CBC's time goes.
inline constexpr double kRelativeGap = 1e-3;

class IntegerProgram {
 public:
  int add_binary(double cost);
  int add_continuous(double lower, double upper, double cost);
  void add_row(const std::vector<std::pair<int, double>>& terms, double lower, double upper);
  // A known feasible answer to start from: the integer columns that are not 0, and their values.
  void set_start(std::vector<std::pair<int, double>> start) { start_ = std::move(start); }
  int num_columns() const { return static_cast<int>(columns_.size()); }

  struct Result {
    bool solved = false;       // a feasible answer was found
    bool optimal = false;      // and proven optimal
    bool infeasible = false;   // proven to have none
    std::vector<double> x;
    double objective = 0.0;
    double bound = 0.0;        // no feasible answer costs less
    bool bound_known = false;  // CBC reported the bound (false when it was stopped first)
  };
  // At most `seconds` of wall time, model building included; after them, what CBC found by then is
  // lost and the result is "not solved".
  Result minimize(double seconds) const;

  // Whether this build has an exact solver (CBC); without one, minimize() is not available.
  static bool available();

 public:
  struct Column {
    double lower, upper, cost;
    bool integer;
  };
  struct Row {
    std::vector<std::pair<int, double>> terms;
    double lower, upper;
  };
  int num_rows() const { return static_cast<int>(rows_.size()); }

 private:
  std::vector<Column> columns_;
  std::vector<Row> rows_;
  std::vector<std::pair<int, double>> start_;
};

}  // namespace rematkit::solver
