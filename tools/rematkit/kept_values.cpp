#include "kept_values.hpp"

#include <map>
#include <set>
#include <tuple>

#include "rematkit/autodiff/residual_report.hpp"

namespace rematkit::cli {
namespace {

// A value named the same way under every policy; ordered as print_saved_residuals lists them.
struct ValueKey {
  int rank = 0;  // 0 literal, 1 constant, 2 argument, 3 equation output
  int binder = 0;
  double literal = 0;
  int line = 0, column = 0, role = 0, prim = 0, origin = 0, occurrence = 0, output = 0;
  auto operator<=>(const ValueKey&) const = default;
};

// Every literal, input and equation output of `lin`'s graph by its key, and each value's key.
struct ValueKeys {
  std::map<ValueKey, ValueId> id;
  std::vector<ValueKey> key;  // by ValueId (tangents and cotangent seeds: a default key, unused)
};

ValueKeys value_keys(const Linearization& lin) {
  const FlatGraph& g = lin.graph;
  ValueKeys keys;
  keys.key.resize(g.values.size());
  std::map<std::tuple<int, int, int, int, int>, int> seen;  // equations so far per place, role and primitive
  std::vector<int> occurrence(g.eqns.size(), 0);
  for (size_t e = 0; e < g.eqns.size(); ++e) {
    const FlatEquation& eqn = g.eqns[e];
    occurrence[e] = seen[{eqn.where.line, eqn.where.column, static_cast<int>(eqn.role), static_cast<int>(eqn.prim),
                          static_cast<int>(eqn.origin)}]++;
  }
  for (ValueId id = 0; id < static_cast<ValueId>(g.values.size()); ++id) {
    const Value& v = g.values[static_cast<size_t>(id)];
    ValueKey key;
    switch (v.origin) {
      case ValueOrigin::kLiteral: key.literal = v.literal; break;
      case ValueOrigin::kConstant: key.rank = 1, key.binder = v.binder; break;
      case ValueOrigin::kArgument: key.rank = 2, key.binder = v.binder; break;
      case ValueOrigin::kEquation: {
        const FlatEquation& eqn = g.eqns[static_cast<size_t>(v.producer)];
        key.rank = 3;
        key.line = eqn.where.line;
        key.column = eqn.where.column;
        key.role = static_cast<int>(eqn.role);
        key.prim = static_cast<int>(eqn.prim);
        key.origin = static_cast<int>(eqn.origin);
        key.occurrence = occurrence[static_cast<size_t>(v.producer)];
        for (size_t o = 0; o < eqn.outputs.size(); ++o)
          if (eqn.outputs[o] == id) key.output = static_cast<int>(o);
        break;
      }
      case ValueOrigin::kTangentInput: case ValueOrigin::kCotangentSeed: continue;
    }
    keys.id.emplace(key, id);
    keys.key[static_cast<size_t>(id)] = key;
  }
  return keys;
}

// "output of sin from FILE:LINE" without " from FILE:LINE" (the table names the line itself).
std::string origin_without_place(const Linearization& lin, const Residual& r) {
  std::string origin = residual_origin(lin, r);
  const Value& v = lin.graph.values[static_cast<size_t>(r.value)];
  if (v.origin != ValueOrigin::kEquation) return origin;
  const size_t from = origin.rfind(" from ");
  return from == std::string::npos ? origin : origin.substr(0, from);
}

}  // namespace

const char* kept_as_name(KeptAs as) {
  switch (as) {
    case KeptAs::kKept: return "kept";
    case KeptAs::kOffloaded: return "offloaded";
    case KeptAs::kRecomputed: return "recomputed";
    case KeptAs::kNotRead: break;
  }
  return "not_read";
}

std::vector<KeptValueRow> kept_value_rows(const std::vector<const Linearization*>& lins) {
  std::vector<ValueKeys> keys;
  for (const Linearization* lin : lins) keys.push_back(value_keys(*lin));
  // The rows: every residual of every linearization, by key, labelled by the first that keeps it.
  std::map<ValueKey, KeptValueRow> rows;
  for (size_t p = 0; p < lins.size(); ++p) {
    const Linearization& lin = *lins[p];
    for (const Residual& r : lin.residuals) {
      const ValueKey& key = keys[p].key[static_cast<size_t>(r.value)];
      if (rows.count(key)) continue;
      const Value& v = lin.graph.values[static_cast<size_t>(r.value)];
      KeptValueRow row;
      row.type = device_type(v).str();  // one device's, on a mesh
      row.origin = origin_without_place(lin, r);
      if (v.origin == ValueOrigin::kEquation) row.line = key.line;
      rows.emplace(key, std::move(row));
    }
  }
  // Each linearization's cell of each row.
  for (size_t p = 0; p < lins.size(); ++p) {
    const Linearization& lin = *lins[p];
    std::map<ValueId, const Residual*> residual_of;
    for (const Residual& r : lin.residuals) residual_of[r.value] = &r;
    const std::set<int> recomputed(lin.recomputed.begin(), lin.recomputed.end());
    for (auto& [key, row] : rows) {
      KeptCell cell;
      const auto found = keys[p].id.find(key);
      if (found != keys[p].id.end()) {
        const Value& v = lin.graph.values[static_cast<size_t>(found->second)];
        if (const auto kept = residual_of.find(found->second); kept != residual_of.end()) {
          cell.as = kept->second->type.space == MemorySpace::kPinnedHost ? KeptAs::kOffloaded : KeptAs::kKept;
          cell.bytes = device_type(v).bytes();
        } else if (v.origin == ValueOrigin::kEquation && recomputed.count(v.producer)) {
          cell.as = KeptAs::kRecomputed;
        }
      }
      row.cells.push_back(cell);
    }
  }
  std::vector<KeptValueRow> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  // Rows that would read the same (the equations a jitted function's line holds, say) are numbered.
  std::map<std::tuple<std::string, std::string, int>, std::vector<KeptValueRow*>> same;
  for (KeptValueRow& row : out) same[{row.type, row.origin, row.line}].push_back(&row);
  for (auto& [label, group] : same)
    for (size_t i = 0; group.size() > 1 && i < group.size(); ++i) group[i]->origin += " #" + std::to_string(i + 1);
  return out;
}

}  // namespace rematkit::cli
