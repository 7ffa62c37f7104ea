#include "c_values.hpp"

#include "plugin_policy.hpp"

namespace rematkit::plugin_host {
namespace {

rk_value empty_value(rk_value_kind kind) {
  rk_value v{};
  v.struct_size = sizeof(rk_value);
  v.kind = kind;
  return v;
}

}  // namespace

const char* CValues::keep(std::string s) {
  strings_.push_back(std::move(s));
  return strings_.back().c_str();
}

rk_value CValues::convert(const ParamValue& v, const PolicyRegistry* registry, std::vector<PolicyPtr>* nested) {
  using Kind = ParamValue::Kind;
  const bool names_policy = registry && (v.kind == Kind::kIdent || v.kind == Kind::kCall || v.kind == Kind::kFunction) &&
                            registry->contains(v.text);
  // In policy arguments a bare word must be a policy; names are written as strings.
  if (registry && v.kind == Kind::kIdent && !names_policy)
    fail("unknown policy '" + v.text + "' (write '" + v.text + "' in quotes if it is a name)");
  if (registry && v.kind == Kind::kCall && !names_policy && v.text != "frozenset" && v.text != "set")
    fail("unknown policy '" + v.text + "'");
  if (names_policy) {
    PolicyPtr policy = registry->build(v);
    const auto* from_plugin = dynamic_cast<const PluginPolicy*>(policy.get());
    if (!from_plugin) fail("policy '" + v.text + "' does not come from a plugin, so it cannot be passed to one");
    rk_value out = empty_value(RK_VALUE_POLICY);
    out.policy = from_plugin->instance();
    out.policy_api = from_plugin->api();
    nested->push_back(std::move(policy));
    return out;
  }
  switch (v.kind) {
    case Kind::kNone: return empty_value(RK_VALUE_NONE);
    case Kind::kBool: {
      rk_value out = empty_value(RK_VALUE_BOOL);
      out.int_value = v.boolean ? 1 : 0;
      return out;
    }
    case Kind::kInt: {
      rk_value out = empty_value(RK_VALUE_INT);
      out.int_value = v.integer;
      return out;
    }
    case Kind::kFloat: {
      rk_value out = empty_value(RK_VALUE_FLOAT);
      out.float_value = v.number;
      return out;
    }
    case Kind::kString: case Kind::kIdent: case Kind::kFunction: {
      rk_value out = empty_value(RK_VALUE_STRING);
      out.string_value = keep(v.text);
      return out;
    }
    case Kind::kKeyword: {
      rk_value out = convert(v.items.at(0), registry, nested);
      out.name = keep(v.text);
      return out;
    }
    case Kind::kCall: {
      // frozenset({'a'}) and set(...) are their elements; other calls (GatherDimensionNumbers(...))
      // are lists of their (keyword) arguments, named by the call.
      if ((v.text == "frozenset" || v.text == "set") && v.items.size() <= 1)
        return v.items.empty() ? convert(ParamValue::of_tuple({}), registry, nested)
                               : convert(v.items[0], registry, nested);
      ParamValue arguments = ParamValue::of_tuple(v.items);
      rk_value out = convert(arguments, registry, nested);
      out.string_value = keep(v.text);
      return out;
    }
    case Kind::kProgram: {
      rk_value out = empty_value(RK_VALUE_STRING);
      out.string_value = keep("<jaxpr>");
      return out;
    }
    case Kind::kTuple: case Kind::kList: case Kind::kSet: {
      std::vector<rk_value> items;
      for (const ParamValue& item : v.items) items.push_back(convert(item, registry, nested));
      lists_.push_back(std::move(items));
      rk_value out = empty_value(RK_VALUE_LIST);
      out.items = lists_.back().data();
      out.num_items = lists_.back().size();
      return out;
    }
  }
  return empty_value(RK_VALUE_NONE);
}

std::vector<rk_value> CValues::params(const Params& params) {
  std::vector<rk_value> out;
  for (const auto& [key, value] : params.entries) {
    rk_value v = convert(value, nullptr, nullptr);
    v.name = keep(key);
    out.push_back(v);
  }
  return out;
}

std::vector<rk_value> CValues::policy_args(const std::vector<ParamValue>& args, const PolicyRegistry& registry,
                                           std::vector<PolicyPtr>& nested) {
  std::vector<rk_value> out;
  for (const ParamValue& a : args) out.push_back(convert(a, &registry, &nested));
  return out;
}

}  // namespace rematkit::plugin_host
