#include "rematkit/ir/params.hpp"

#include <algorithm>
#include <cstdio>

#include "rematkit/ir/printer.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

ParamValue ParamValue::of_bool(bool b) {
  ParamValue v;
  v.kind = Kind::kBool;
  v.boolean = b;
  return v;
}

ParamValue ParamValue::of_int(int64_t i) {
  ParamValue v;
  v.kind = Kind::kInt;
  v.integer = i;
  return v;
}

ParamValue ParamValue::of_string(std::string s) {
  ParamValue v;
  v.kind = Kind::kString;
  v.text = std::move(s);
  return v;
}

ParamValue ParamValue::of_ident(std::string s) {
  ParamValue v;
  v.kind = Kind::kIdent;
  v.text = std::move(s);
  return v;
}

ParamValue ParamValue::of_tuple(std::vector<ParamValue> items) {
  ParamValue v;
  v.kind = Kind::kTuple;
  v.items = std::move(items);
  return v;
}

ParamValue ParamValue::of_ints(const std::vector<int64_t>& values) {
  std::vector<ParamValue> items;
  for (int64_t i : values) items.push_back(of_int(i));
  return of_tuple(std::move(items));
}

ParamValue ParamValue::of_program(std::shared_ptr<const Program> program) {
  ParamValue v;
  v.kind = Kind::kProgram;
  v.program = std::move(program);
  return v;
}

namespace {

std::string join_items(const std::vector<ParamValue>& items, int indent) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i].str(indent);
  }
  return out;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace

std::string ParamValue::str(int indent) const {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kBool: return boolean ? "True" : "False";
    case Kind::kInt: return std::to_string(integer);
    case Kind::kFloat: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", number);
      std::string s = buf;
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::kString: return quote(text);
    case Kind::kIdent: return text;
    case Kind::kTuple:
      return "(" + join_items(items, indent) + (items.size() == 1 ? ",)" : ")");
    case Kind::kList: return "[" + join_items(items, indent) + "]";
    case Kind::kSet: return "{" + join_items(items, indent) + "}";
    case Kind::kCall: return text + "(" + join_items(items, indent) + ")";
    case Kind::kKeyword: return text + "=" + items.at(0).str(indent);
    case Kind::kFunction: return "<function " + text + ">";
    case Kind::kProgram: return print_program(*program, indent);
  }
  return "?";
}

bool operator==(const ParamValue& a, const ParamValue& b) {
  if (a.kind != b.kind || a.boolean != b.boolean || a.integer != b.integer || a.text != b.text ||
      a.items != b.items)
    return false;
  if (a.kind == ParamValue::Kind::kFloat && a.number != b.number) return false;
  if (a.kind == ParamValue::Kind::kProgram) return *a.program == *b.program;
  return true;
}

const ParamValue* Params::find(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void Params::set(const std::string& key, ParamValue value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

namespace {

const ParamValue& require(const Params& p, const std::string& key, const SourceLocation& where) {
  const ParamValue* v = p.find(key);
  if (!v) fail_at(where, "missing parameter '" + key + "'");
  return *v;
}

}  // namespace

std::vector<int64_t> ints_of(const ParamValue& v, const std::string& key, const SourceLocation& where) {
  if (v.kind == ParamValue::Kind::kInt) return {v.integer};
  if (!v.is_sequence()) fail_at(where, "parameter '" + key + "' must be a tuple of integers, got " + v.str());
  std::vector<int64_t> out;
  for (const ParamValue& item : v.items) {
    if (item.kind != ParamValue::Kind::kInt)
      fail_at(where, "parameter '" + key + "' must be a tuple of integers, got " + v.str());
    out.push_back(item.integer);
  }
  return out;
}

int64_t param_int(const Params& p, const std::string& key, const SourceLocation& where) {
  const ParamValue& v = require(p, key, where);
  if (v.kind != ParamValue::Kind::kInt) fail_at(where, "parameter '" + key + "' must be an integer, got " + v.str());
  return v.integer;
}

std::vector<int64_t> param_ints(const Params& p, const std::string& key, const SourceLocation& where) {
  return ints_of(require(p, key, where), key, where);
}

bool param_bool(const Params& p, const std::string& key, const SourceLocation& where) {
  const ParamValue& v = require(p, key, where);
  if (v.kind != ParamValue::Kind::kBool) fail_at(where, "parameter '" + key + "' must be True or False, got " + v.str());
  return v.boolean;
}

std::vector<int64_t> param_ints_or_none(const Params& p, const std::string& key, const SourceLocation& where) {
  const ParamValue* v = p.find(key);
  if (!v || v->kind == ParamValue::Kind::kNone) return {};
  return ints_of(*v, key, where);
}

std::string param_name(const Params& p, const std::string& key, const SourceLocation& where) {
  const ParamValue& v = require(p, key, where);
  // pjit of a lambda prints name=<unnamed function>: its text is the name.
  if (v.kind != ParamValue::Kind::kIdent && v.kind != ParamValue::Kind::kString && v.kind != ParamValue::Kind::kFunction)
    fail_at(where, "parameter '" + key + "' must be a name, got " + v.str());
  return v.text;
}

}  // namespace rematkit
