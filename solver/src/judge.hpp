// The budget solver's judged answers: every answer a proposer offers is planned once by the exact
// planner (planner_judge.hpp) and kept with its planned peak, its cost and the proposer that found
// it. The memory model the proposers search with is recalibrated on what the planner finds, and
// the answers the planner found over a budget the model fitted are kept as cuts for the integer
// program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "deadline.hpp"
#include "problem.hpp"

namespace rematkit::solver {

struct JudgedAnswer {
  Answer answer;
  int64_t peak = 0;  // planned
  double recompute_flops = 0.0;
  int64_t residual_bytes = 0;
  double cost = 0.0;   // the model's (Problem::model_cost)
  std::string origin;  // which proposer found it, for the method line
};

class Judge {
 public:
  Judge(const Program& program, const BudgetOptions& options, const PluginRegistry& plugins, bool whole_program);

  // One planner call, timed: proposers stop asking for one when less than the longest so far is left.
  Verdict plan(const DecisionTable& table);
  // From here on answers are judged as decisions on `problem`'s candidates, with a model of them.
  void begin(const Problem& problem);

  // `a` planned as `v`: the model calibrated on it, and kept. Its index.
  size_t record(const Answer& a, const Verdict& v, const std::string& origin);
  // `a` judged (once: an answer judged before keeps its index and origin), the model calibrated on it.
  size_t judge(const Answer& a, const std::string& origin);
  // The same, the model left as it is.
  size_t judge_only(const Answer& a, const std::string& origin);

  const JudgedAnswer& operator[](size_t j) const { return judged_[j]; }
  const std::vector<JudgedAnswer>& answers() const { return judged_; }
  const MemoryModel& model() const { return *model_; }
  int64_t smallest() const { return smallest_; }  // the smallest planned peak so far
  int calls() const { return planner_.calls(); }
  double seconds_per_call() const { return judge_seconds_; }  // the longest planner call so far
  bool time_for_a_judgment(const Deadline& deadline, double also = 0.0) const {
    return deadline.left() > 1.2 * judge_seconds_ + also;
  }
  // Answers the planner found over the budget the model fitted them in: the integer program
  // excludes them.
  std::vector<Cut>& cuts() { return cuts_; }

  // FLOPs as the planner counts them; measured nanoseconds as the model sums them.
  double ranked_cost(size_t j) const;
  // Whether judged answer j may be the answer: planned within the budget, and, for a JAX export,
  // one decision per signature (the planner-side searches need not keep to it).
  bool fits(size_t j, int64_t budget) const;
  // Every answer judged within budget is a candidate; the planner's count of recomputed FLOPs
  // settles it (JAX's fixed policies among them, so none of those is both smaller and cheaper).
  // Ties go to the smaller peak (equations of no FLOPs, data movement, are free to recompute).
  // `found` is what the method found; the method line says so when another proposer's answer wins.
  size_t cheapest_within(int64_t budget, size_t found, BudgetSolution& solution) const;

  // A registered policy's decisions as a per-candidate answer.
  Answer answer_of_policy(const std::string& spec) const;

 private:
  std::optional<size_t> find(const Answer& a) const;
  size_t remember(const Answer& a, const Verdict& v, const std::string& origin);

  PlannerJudge planner_;
  const Problem* problem_ = nullptr;
  std::optional<MemoryModel> model_;
  std::vector<JudgedAnswer> judged_;
  std::vector<Cut> cuts_;
  double judge_seconds_ = 0.0;
  int64_t smallest_ = INT64_MAX;
};

}  // namespace rematkit::solver
