// Whether a budget answer can be said by checkpoint_name's names, as JAX's names policies decide.
// jax/_src/ad_checkpoint.py (jax-ml/jax at cec06d116c05): SaveOnlyTheseNames saves a `name`
// equation whose name is listed and returns False for every other equation;
// SaveAndOffloadOnlyTheseNames returns Saveable or Offloadable for listed names and Recompute for
// the rest. Under jax_remat3 only these dataclasses are read (CheckpointName.remat there); a Python
// function policy is never called and everything is recomputed.
#include <map>

#include "rematkit/budget_solver.hpp"

namespace rematkit {
namespace {

// The name a `name` equation carries. remat_model.cpp's signature_of ends a name equation's
// signature with " name=" and the name; no operand type contains "name=".
const std::string* name_of(const SolvedEquation& e, std::string& buffer) {
  if (e.primitive != "name") return nullptr;
  const size_t at = e.signature.find(" name=");
  if (at == std::string::npos) return nullptr;
  buffer = e.signature.substr(at + 6);
  return &buffer;
}

// "12:5": the line and column in the program (the file is the one solved); else the site.
std::string place(const SolvedEquation& e) {
  if (e.where.line <= 0) return "[" + e.site + "]";
  return std::to_string(e.where.line) + ":" + std::to_string(e.where.column);
}

// The first few of `items`, then how many more: a reason stays one readable line on a large model.
std::string some_of(const std::vector<std::string>& items) {
  constexpr size_t kShown = 5;
  std::string out;
  for (size_t i = 0; i < items.size() && i < kShown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > kShown) out += ", and " + std::to_string(items.size() - kShown) + " more";
  return out;
}

}  // namespace

NamesPolicy names_policy_of(const BudgetSolution& s) {
  std::vector<std::string> unnamed;  // kept values no name says
  std::map<std::string, const SolvedEquation*> first;  // each name's first value the backward pass reads
  std::map<std::string, std::vector<std::string>> split;  // names decided both ways: where
  std::string buffer;
  for (const SolvedEquation& e : s.equations) {
    if (!e.read_by_backward) continue;  // not needed: a names policy's answer for it changes nothing
    const std::string* name = name_of(e, buffer);
    if (!name) {
      if (e.decision != Decision::kRecompute)
        unnamed.push_back(e.primitive + " at " + place(e) + (e.decision == Decision::kOffloadable ? " (offloaded)" : ""));
      continue;
    }
    const auto [it, fresh] = first.try_emplace(*name, &e);
    if (fresh || it->second->decision == e.decision) continue;
    std::vector<std::string>& where = split[*name];
    if (where.empty()) where.push_back(std::string(decision_word(it->second->decision)) + " at " + place(*it->second));
    where.push_back(std::string(decision_word(e.decision)) + " at " + place(e));
  }
  NamesPolicy p;
  std::vector<std::string> reasons;
  if (!unnamed.empty())
    reasons.push_back("the answer keeps " + std::to_string(unnamed.size()) + " unnamed value" +
                      (unnamed.size() == 1 ? "" : "s") + ": " + some_of(unnamed));
  for (const auto& [name, where] : split)
    reasons.push_back("the values named '" + name + "' are decided differently: " + some_of(where));
  if (!reasons.empty()) {
    for (size_t i = 0; i < reasons.size(); ++i) p.why_not += (i ? "; " : "") + reasons[i];
    return p;
  }
  p.sayable = true;
  for (const auto& [name, e] : first) {  // std::map: sorted by name
    if (e->decision == Decision::kSaveable) p.saved.push_back(name);
    if (e->decision == Decision::kOffloadable) p.offloaded.push_back(name);
  }
  return p;
}

}  // namespace rematkit
