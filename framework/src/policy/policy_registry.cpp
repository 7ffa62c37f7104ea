#include "rematkit/ir/near_names.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/policy/policy.hpp"

namespace rematkit {

void PolicyRegistry::add(const std::string& name, PolicyFactory factory) {
  factories_[name] = std::move(factory);
}

std::vector<std::string> PolicyRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, factory] : factories_) out.push_back(name);
  return out;
}

namespace {

// A policy error whose message is complete (it names the policy): not prefixed again when it
// passes through enclosing policies' builds.
class CompletePolicyError : public Error {
 public:
  explicit CompletePolicyError(const std::string& message) : Error(ErrorKind::kBadInput, message) {}
};

}  // namespace

PolicyPtr PolicyRegistry::build(const ParamValue& spec) const {
  using Kind = ParamValue::Kind;
  if (spec.kind == Kind::kNone) return build(ParamValue::of_ident("nothing_saveable"));
  const std::string& name = spec.text;
  if (spec.kind == Kind::kFunction) {
    // JAX prints a policy built inside a helper as <function helper.<locals>.policy at 0x..>:
    // its arguments are gone, so say how to write it.
    if (auto locals = name.find(".<locals>"); locals != std::string::npos) {
      std::string helper = name.substr(0, locals);
      throw CompletePolicyError("the policy '<function " + name + ">' was printed without its arguments; write it as " +
                                helper +
                                (helper == "save_from_both_policies" ? "(dots_saveable, nothing_saveable)" : "('a')") +
                                " with the arguments it was made with");
    }
  } else if (spec.kind != Kind::kIdent && spec.kind != Kind::kCall) {
    throw CompletePolicyError("expected a policy name or call, got " + spec.str());
  }
  auto it = factories_.find(name);
  if (it == factories_.end())
    throw CompletePolicyError(
        "unknown policy '" + name + "'" + did_you_mean(name, names()) +
        (factories_.empty() ? " (no policy plugins were found: set REMATKIT_PLUGIN_PATH or pass --plugin)" : ""));
  try {
    return it->second(spec.kind == Kind::kCall ? spec.items : std::vector<ParamValue>{}, *this);
  } catch (const CompletePolicyError&) {
    throw;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kBadInput) throw;
    throw CompletePolicyError(name + ": " + e.what());
  }
}

PolicyPtr PolicyRegistry::make(const ParamValue& spec, const SourceLocation& where) const {
  try {
    return build(spec);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kBadInput) throw;
    fail_at(where, e.what());
  }
}

PolicyPtr PolicyRegistry::parse(std::string_view text, const SourceLocation& where) const {
  return make(parse_param_value(text, where.file.empty() ? "--policy" : where.file), where);
}

}  // namespace rematkit
