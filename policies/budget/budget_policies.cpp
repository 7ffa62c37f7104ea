// Policies that decide with the whole program in view (they need ABI 1.4's survey and sites):
//  - solved('decisions.json'): the decisions `rematkit solve` wrote, per equation site (or per
//    JAX-style signature, for a policy exported to JAX), replayed exactly;
//  - knapsack_budget(fraction): what PyTorch's activation_memory_budget does (torch/_functorch/
//    partitioners.py, choose_saved_values_set): a 0-1 knapsack that keeps the values whose
//    recomputation would cost the most FLOPs, within `fraction` of the bytes that saving every
//    saveable value would take. It estimates bytes, not the peak; `rematkit solve` plans the peak.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::plugin::ArgumentError;
using rematkit::plugin::policy_table;
using Instance = rematkit::plugin::DecisionFunction;

// JAX's short dtype names, by rk_dtype code (aval.str_short() spells them the same).
const char* dtype_short_name(int32_t code) {
  static const char* const kNames[] = {"f32", "i32", "bool", "bf16", "f16", "f64", "i64", "u32", "u8", "i8", "key<fry>", "c64", "c128"};
  return code >= 0 && code < static_cast<int32_t>(std::size(kNames)) ? kNames[code] : "?";
}

int64_t elements(const rk_type& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i) n *= t.shape[i];
  return n;
}

int64_t element_bytes(int32_t code) {
  switch (code) {
    case RK_DTYPE_BOOL: case RK_DTYPE_U8: case RK_DTYPE_I8: return 1;
    case RK_DTYPE_BF16: case RK_DTYPE_F16: return 2;
    case RK_DTYPE_F64: case RK_DTYPE_I64: case RK_DTYPE_KEY_FRY: case RK_DTYPE_C64: return 8;
    case RK_DTYPE_C128: return 16;
    default: return 4;
  }
}

// What a JAX policy can tell equations apart by: the primitive, its operands' avals (as
// aval.str_short() prints them) and, for checkpoint_name, the name. `rematkit solve --export jax`
// builds the same key in Python.
std::string signature_of(const rk_equation_view* e) {
  std::string key = e->primitive;
  for (size_t i = 0; i < e->num_inputs; ++i) {
    const rk_type& t = e->inputs[i];
    key += std::string(" ") + dtype_short_name(t.dtype) + "[";
    for (int32_t d = 0; d < t.rank; ++d) key += (d ? "," : "") + std::to_string(t.shape[d]);
    key += "]";
  }
  if (key.rfind("name", 0) == 0) {
    const rk_value* n = rematkit::plugin::find_param(e, "name");
    if (n && n->string_value) key += std::string(" name=") + n->string_value;
  }
  return key;
}

rk_decision_kind decision_named(const std::string& text, const std::string& where) {
  if (text == "saveable") return RK_SAVEABLE;
  if (text == "recompute") return RK_RECOMPUTE;
  if (text == "offloadable") return RK_OFFLOADABLE;
  throw ArgumentError(where + ": decision '" + text + "' is not saveable, recompute or offloadable");
}

std::string string_arg(const rk_value* args, size_t n, const char* what) {
  if (n != 1 || args[0].kind != RK_VALUE_STRING || !args[0].string_value)
    throw ArgumentError(std::string("takes one string, ") + what);
  return args[0].string_value;
}

// --- solved('decisions.json') ------------------------------------------------------------------

struct SolvedTable {
  std::string file;
  bool by_signature = false;
  rk_decision_kind otherwise = RK_SAVEABLE;
  struct Entry {
    std::string primitive;
    rk_decision_kind kind = RK_SAVEABLE;
  };
  std::map<std::string, Entry> entries;  // by site, or by signature
};

SolvedTable read_table(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw ArgumentError("cannot read decisions file '" + file + "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ArgumentError(file + ": not JSON: " + e.what());
  }
  SolvedTable t;
  t.file = file;
  try {
    if (doc.value("format", "") != "rematkit-decisions/1")
      throw ArgumentError(file + ": not a rematkit decisions file (its \"format\" is not \"rematkit-decisions/1\")");
    const std::string match = doc.value("match", "site");
    if (match != "site" && match != "signature") throw ArgumentError(file + ": \"match\" is '" + match + "', not site or signature");
    t.by_signature = match == "signature";
    t.otherwise = decision_named(doc.value("otherwise", "saveable"), file);
    for (const nlohmann::json& d : doc.at("decisions")) {
      const std::string key = d.at(t.by_signature ? "signature" : "site").get<std::string>();
      SolvedTable::Entry entry{d.value("primitive", ""), decision_named(d.at("decision").get<std::string>(), file)};
      if (entry.kind == RK_OFFLOADABLE && t.by_signature) throw ArgumentError(file + ": a JAX-signature table cannot offload");
      if (!t.entries.emplace(key, entry).second) throw ArgumentError(file + ": '" + key + "' is decided twice");
    }
  } catch (const nlohmann::json::exception& e) {
    throw ArgumentError(file + ": " + e.what());
  }
  return t;
}

void check_primitive(const SolvedTable& table, const std::string& key, const rk_equation_view* e) {
  const auto it = table.entries.find(key);
  if (it != table.entries.end() && !it->second.primitive.empty() && it->second.primitive != e->primitive)
    throw ArgumentError(table.file + " was solved for another program: its equation " + key + " is " +
                        it->second.primitive + ", here it is " + e->primitive);
}

Instance solved(const rk_value* args, size_t n) {
  auto table = std::make_shared<const SolvedTable>(read_table(string_arg(args, n, "the decisions file rematkit solve wrote")));
  Instance instance;
  // Every equation it may decide is checked against the file, also those it is never asked about.
  instance.survey = [table](const rk_equation_view* eqns, size_t num) {
    if (table->by_signature) return;
    for (size_t i = 0; i < num; ++i) check_primitive(*table, rematkit::plugin::site_of(&eqns[i]), &eqns[i]);
  };
  instance.decide = [table](const rk_equation_view* e, rk_decision* out) {
    const std::string key = table->by_signature ? signature_of(e) : rematkit::plugin::site_of(e);
    check_primitive(*table, key, e);
    const auto it = table->entries.find(key);
    out->kind = it == table->entries.end() ? table->otherwise : it->second.kind;
    if (out->kind == RK_OFFLOADABLE) out->offload_src = RK_MEMORY_DEVICE, out->offload_dst = RK_MEMORY_PINNED_HOST;
  };
  return instance;
}

// --- knapsack_budget(fraction) ----------------------------------------------------------------

// The knapsack's answer, filled by survey. Bytes are scaled to at most kUnits units, rounded up,
// so the chosen set never exceeds the budget (the DP is exact on the scaled weights).
struct Knapsack {
  double fraction = 0.0;
  std::map<std::string, bool> keep;  // by site
};

constexpr int64_t kUnits = 4096;

void solve_knapsack(Knapsack& k, const rk_equation_view* eqns, size_t n) {
  struct Item {
    std::string site;
    int64_t bytes = 0;
    double flops = 0.0;
  };
  std::vector<Item> items;
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    Item it{rematkit::plugin::site_of(&eqns[i]), 0, rematkit::plugin::flops_of(&eqns[i])};
    for (size_t o = 0; o < eqns[i].num_outputs; ++o) it.bytes += elements(eqns[i].outputs[o]) * element_bytes(eqns[i].outputs[o].dtype);
    total += it.bytes;
    k.keep[it.site] = false;
    if (it.flops > 0 && it.bytes > 0) items.push_back(std::move(it));  // free to recompute: never worth keeping
  }
  if (total == 0 || items.empty()) return;
  const double unit = static_cast<double>(total) / kUnits;
  const int64_t capacity = static_cast<int64_t>(std::floor(k.fraction * kUnits + 1e-9));
  // best[c]: the most FLOPs kept within c units; taken[i][c]: whether item i is in that set.
  std::vector<double> best(static_cast<size_t>(capacity + 1), 0.0);
  std::vector<std::vector<char>> taken(items.size(), std::vector<char>(static_cast<size_t>(capacity + 1), 0));
  for (size_t i = 0; i < items.size(); ++i) {
    const int64_t w = static_cast<int64_t>(std::ceil(static_cast<double>(items[i].bytes) / unit - 1e-9));
    for (int64_t c = capacity; c >= w; --c)
      if (best[static_cast<size_t>(c - w)] + items[i].flops > best[static_cast<size_t>(c)]) {
        best[static_cast<size_t>(c)] = best[static_cast<size_t>(c - w)] + items[i].flops;
        taken[i][static_cast<size_t>(c)] = 1;
      }
  }
  int64_t c = capacity;
  for (size_t i = items.size(); i-- > 0;)
    if (taken[i][static_cast<size_t>(c)]) {
      k.keep[items[i].site] = true;
      c -= static_cast<int64_t>(std::ceil(static_cast<double>(items[i].bytes) / unit - 1e-9));
    }
}

Instance knapsack_budget(const rk_value* args, size_t n) {
  if (n != 1 || (args[0].kind != RK_VALUE_FLOAT && args[0].kind != RK_VALUE_INT))
    throw ArgumentError("takes one number, the fraction of the saveable bytes to keep (0 to 1)");
  const double fraction = args[0].kind == RK_VALUE_FLOAT ? args[0].float_value : static_cast<double>(args[0].int_value);
  if (!(fraction >= 0.0 && fraction <= 1.0)) throw ArgumentError("the fraction must be between 0 and 1, not " + std::to_string(fraction));
  auto state = std::make_shared<Knapsack>();
  state->fraction = fraction;
  Instance instance;
  instance.survey = [state](const rk_equation_view* eqns, size_t num) { solve_knapsack(*state, eqns, num); };
  instance.decide = [state](const rk_equation_view* e, rk_decision* out) {
    // An equation it was not shown (a loop body's, which has no site) is recomputed.
    const auto it = state->keep.find(rematkit::plugin::site_of(e));
    out->kind = it != state->keep.end() && it->second ? RK_SAVEABLE : RK_RECOMPUTE;
  };
  return instance;
}

const rk_policy_api kSolved = policy_table<solved>("solved", "solved('decisions.json'): the decisions rematkit solve wrote");
const rk_policy_api kKnapsack = policy_table<knapsack_budget>(
    "knapsack_budget", "knapsack_budget(FRACTION): PyTorch's activation-memory budget, a knapsack on estimated bytes");
const rk_policy_api* const kPolicies[] = {&kSolved, &kKnapsack};

const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "budget-policies", "1.0.0",
                            &rematkit::plugin::remember_host, std::size(kPolicies), kPolicies, 0, nullptr};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
