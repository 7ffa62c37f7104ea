#include "integer_program.hpp"

#include "rematkit/ir/error.hpp"

#ifdef REMATKIT_HAVE_CBC
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

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

namespace {

// CBC, in this process, for at most `seconds` as CBC counts them.
IntegerProgram::Result solve_with_cbc(const std::vector<IntegerProgram::Column>& columns,
                                      const std::vector<IntegerProgram::Row>& rows,
                                      const std::vector<std::pair<int, double>>& start, double seconds) {
  Cbc_Model* model = Cbc_newModel();
  for (const IntegerProgram::Column& c : columns)
    Cbc_addCol(model, "", c.lower, c.upper == kUnbounded ? DBL_MAX : c.upper, c.cost, c.integer ? 1 : 0, 0,
               nullptr, nullptr);
  std::vector<int> cols;
  std::vector<double> coefs;
  for (const IntegerProgram::Row& r : rows) {
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
  if (!start.empty()) {
    std::vector<int> idx;
    std::vector<double> val;
    for (const auto& [col, v] : start) idx.push_back(col), val.push_back(v);
    Cbc_setMIPStartI(model, static_cast<int>(idx.size()), idx.data(), val.data());
  }
  Cbc_setLogLevel(model, 0);
  Cbc_setParameter(model, "timeMode", "elapsed");  // the limit is the user's wall clock, on a busy machine too
  Cbc_setAllowablePercentageGap(model, 100.0 * kRelativeGap);
  Cbc_setMaximumSeconds(model, seconds > 0.01 ? seconds : 0.01);
  // CBC's preprocessing costs more on the time-indexed program than it buys (measured in
  // docs/performance.md, "Measurements behind choices in the code").
  Cbc_setParameter(model, "preprocess", "off");
  Cbc_solve(model);
  IntegerProgram::Result result;
  result.infeasible = Cbc_isProvenInfeasible(model) != 0;
  const double* x = Cbc_bestSolution(model);
  if (x && !result.infeasible) {
    result.solved = true;
    result.x.assign(x, x + columns.size());
    result.objective = Cbc_getObjValue(model);
    result.optimal = Cbc_isProvenOptimal(model) != 0;
  }
  result.bound = Cbc_getBestPossibleObjValue(model);
  result.bound_known = true;
  Cbc_deleteModel(model);
  return result;
}

// A result through a pipe: the flags, objective and bound, then x.
struct ResultHeader {
  int32_t solved, optimal, infeasible, bound_known;
  double objective, bound;
  uint64_t size;
};

bool write_all(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

// CBC checks its time limit between nodes, not inside the root LP and its cut rounds, which on a
// large model run for minutes past it. So it solves in a child process (fork), and the parent stops
// waiting at the deadline, kills the child and answers "not solved": a deadline it cannot overrun.
// Where fork fails, CBC runs here under its own limit.
IntegerProgram::Result IntegerProgram::minimize(double seconds) const {
  seconds = std::max(seconds, 0.01);
  std::fflush(nullptr);  // what the parent buffered is written once, by the parent
  int fds[2];
  if (::pipe(fds) != 0) return solve_with_cbc(columns_, rows_, start_, seconds);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return solve_with_cbc(columns_, rows_, start_, seconds);
  }
  if (child == 0) {
    ::close(fds[0]);
    // CBC's own clock stops it a little early, so that its answer is in before the deadline.
    const Result r = solve_with_cbc(columns_, rows_, start_, seconds * 0.85);
    const ResultHeader h{r.solved, r.optimal, r.infeasible, r.bound_known, r.objective, r.bound, r.x.size()};
    const bool ok = write_all(fds[1], &h, sizeof h) && write_all(fds[1], r.x.data(), r.x.size() * sizeof(double));
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  // Read what the child writes until it closes the pipe or the time is up.
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<char> bytes;
  bool complete = false;
  char chunk[65536];
  for (;;) {
    const double left = std::chrono::duration<double, std::milli>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::ceil(left)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      complete = n == 0;
      break;
    }
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  ::close(fds[0]);
  if (!complete) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  Result result;
  if (!complete || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || bytes.size() < sizeof(ResultHeader)) return result;
  ResultHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (bytes.size() != sizeof h + h.size * sizeof(double)) return result;
  result.solved = h.solved != 0;
  result.optimal = h.optimal != 0;
  result.infeasible = h.infeasible != 0;
  result.bound_known = h.bound_known != 0;
  result.objective = h.objective;
  result.bound = h.bound;
  result.x.resize(h.size);
  // (An empty program has no variables: memcpy must not see a null destination.)
  if (h.size > 0) std::memcpy(result.x.data(), bytes.data() + sizeof h, h.size * sizeof(double));
  return result;
}

#else

bool IntegerProgram::available() { return false; }

IntegerProgram::Result IntegerProgram::minimize(double) const {
  internal_error("this rematkit was built without COIN-OR CBC (coinor-libcbc-dev): no exact solver");
}

#endif

}  // namespace rematkit::solver
