// Recursive-descent parser for programs in jaxpr syntax. Each jaxpr has its own variable scope
// (sub-programs are closed); equations are type-checked as soon as they are read.
#include "rematkit/ir/parser.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "jax_versions.hpp"
#include "lexer.hpp"
#include "remat3_policy.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/nesting_limit.hpp"
#include "rematkit/ir/rounding.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "verifier.hpp"

namespace rematkit {
namespace {

using detail::Lexer;
using detail::Token;

// Dtypes JAX prints that rematkit does not support, so the message can name them.
const std::set<std::string> kUnsupportedDtypes = {"u16", "u64", "i16", "i4", "u4", "key",
                                                  "f8_e4m3fn", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz",
                                                  "float0"};

bool is_number_word(const std::string& w) { return w == "inf" || w == "nan" || w == "infj" || w == "nanj"; }

// Whether a number token is a complex literal: 2j, infj, (1+2j), as Python's complex repr prints.
bool is_complex_literal(const std::string& text) { return !text.empty() && (text.back() == 'j' || text.front() == '('); }

// A complex literal's parts. Python prints the real part only when it is not +0: (1-2j), (-0+1j), 3j.
std::pair<double, double> complex_parts(const std::string& text) {
  std::string body = text.front() == '(' ? text.substr(1, text.size() - 3) : text.substr(0, text.size() - 1);
  if (text.front() != '(') return {0.0, std::strtod(body.c_str(), nullptr)};
  size_t split = body.size();
  for (size_t i = body.size(); i-- > 1;)
    if ((body[i] == '+' || body[i] == '-') && body[i - 1] != 'e' && body[i - 1] != 'E') {
      split = i;
      break;
    }
  return {std::strtod(body.substr(0, split).c_str(), nullptr), std::strtod(body.substr(split).c_str(), nullptr)};
}

// A literal's value (both parts of a complex one) rounded to what its dtype holds.
void round_literal(Atom& a) {
  a.literal = round_to_dtype(a.literal, a.type.dtype, Arithmetic::kFloat32);
  a.literal_imag = round_to_dtype(a.literal_imag, a.type.dtype, Arithmetic::kFloat32);
}

// Whether an untyped literal may take `dtype` from its context: a complex one keeps a complex
// dtype, so that a real context is a type error naming both, not a dropped imaginary part.
bool literal_fits(const Atom& a, DType dtype) { return !is_complex(a.type.dtype) || is_complex(dtype); }

// What an unsupported dtype stands in for while a program is checked, so that what follows is
// checked too (one problem reported for the dtype, not one per equation that reads it).
DType stand_in_dtype(const std::string& name) {
  if (name == "key") return DType::kKeyFry;
  if (name[0] == 'i' || name[0] == 'u') return DType::kI32;
  return DType::kF32;
}

class Parser {
 public:
  // With `problems`, reading goes on past bad equations and adds each error message there.
  // `arg_types` types the main jaxpr's binders that are written without one (JAX before 0.2.22).
  Parser(std::string_view text, const std::string& file, std::vector<std::string>* problems = nullptr,
         const ArgTypes* arg_types = nullptr)
      : lex_(text, file), problems_(problems), arg_types_(arg_types) {}

  // Inferring untyped main binders from their uses (see uses_determine): a probe reading leaves the
  // binders nobody types pending, types each from the first use that determines it, and collects
  // those types in `found`; the next reading takes them as `inferred`. Thrown when no binder is pending.
  struct NothingPending {};
  void probe(const ArgTypes* inferred) {
    probe_ = true;
    inferred_ = inferred;
  }
  void infer_with(const ArgTypes* inferred) { inferred_ = inferred; }
  const ArgTypes& found() const { return found_; }

  Program parse_file() {
    if (lex_.peek().kind == Token::Kind::kEnd) fail_at(lex_.where(lex_.peek()), "empty program: no jaxpr found");
    // Shared sub-programs printed out of line: let NAME = { lambda ... } in
    while (lex_.peek().is_ident("let")) {
      lex_.next();
      Token name = lex_.next();
      if (name.kind != Token::Kind::kIdent) fail_at(lex_.where(name), "expected a sub-program name after 'let'");
      expect('=');
      auto program = std::make_shared<Program>(parse_jaxpr());
      if (!shared_.emplace(name.text, program).second)
        fail_at(lex_.where(name), "sub-program '" + name.text + "' is defined twice");
      shared_where_.emplace(name.text, lex_.where(name));
      expect_word("in");
    }
    Program main = parse_jaxpr(nullptr, true);
    const Token& end = lex_.peek();
    if (end.kind != Token::Kind::kEnd)
      fail_at(lex_.where(end), "unexpected '" + end.text + "' after the program: a file holds exactly one jaxpr");
    if (arg_types_)
      for (const auto& [name, type] : *arg_types_)
        if (!used_arg_types_.count(name))
          fail("--arg-types gives a type to '" + name + "', which is not an untyped binder of the main jaxpr");
    if (probe_) return main;
    // From the main program first, so that its depth counts on the way down; then what it never calls.
    std::set<std::string> active;
    resolve_references(main, active, lex_.where(end));
    for (const auto& [name, where] : shared_where_) resolve_shared(where, name, active);
    if (!shared_.empty()) check_inlined_size(main);
    verify_program(main, problems_);
    return main;
  }

  // NAME:TYPE, NAME:TYPE, ... as --arg-types gives them.
  ArgTypes parse_arg_types() {
    ArgTypes types;
    while (lex_.peek().kind != Token::Kind::kEnd) {
      Token name = lex_.next();
      if (name.kind != Token::Kind::kIdent) error_at(name, "expected NAME:TYPE such as a:f32[3], found " + describe(name));
      expect(':');
      if (!types.emplace(name.text, parse_type()).second) error_at(name, "'" + name.text + "' is given twice");
      if (lex_.peek().kind != Token::Kind::kEnd) expect(',');
    }
    return types;
  }

  ParamValue parse_lone_value() {
    if (lex_.peek().kind == Token::Kind::kEnd) error_at(lex_.peek(), "empty value");
    ParamValue v = parse_value();
    if (lex_.peek().kind != Token::Kind::kEnd) error_at(lex_.peek(), "unexpected " + describe(lex_.peek()));
    return v;
  }

 private:
  // --- tokens -------------------------------------------------------------------------------
  [[noreturn]] void error_at(const Token& t, const std::string& message) { fail_at(lex_.where(t), message); }

  // A number token's value. Past a double's range is an error at the token (JAX prints such a value
  // as inf, never as digits); below it, the value rounds to a subnormal or zero, as Python's float().
  double float_value(const Token& t) {
    errno = 0;
    const double value = std::strtod(t.text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(value)) error_at(t, "the number " + t.text + " is too large for a float64");
    return value;
  }

  // An integer token's value; an error at the token past int64's range.
  int64_t integer_value(const Token& t) {
    errno = 0;
    const long long value = std::strtoll(t.text.c_str(), nullptr, 10);
    if (errno == ERANGE) error_at(t, "the integer " + t.text + " does not fit in 64 bits");
    return value;
  }

  static std::string describe(const Token& t) {
    return t.kind == Token::Kind::kEnd ? std::string("end of file") : "'" + t.text + "'";
  }

  Token expect(char punct) {
    Token t = lex_.next();
    if (!t.is(punct)) error_at(t, std::string("expected '") + punct + "', found " + describe(t));
    return t;
  }

  void expect_word(std::string_view word) {
    Token t = lex_.next();
    if (!t.is_ident(word)) error_at(t, "expected '" + std::string(word) + "', found " + describe(t));
  }

  // --- types --------------------------------------------------------------------------------
  // `sharding`, when given, gets the type as written when it carries JAX's sharding annotations.
  // `is_ref`, when given, accepts a mutable array's type, Ref{f32[3]} (state/types.py's
  // AbstractRef.str_short, Ref<space>{..} with a memory space), and says whether it was one: the
  // type returned is then its element type.
  Type parse_type(std::string* sharding = nullptr, bool* is_ref = nullptr) {
    Token dt = lex_.next();
    if (dt.kind != Token::Kind::kIdent) error_at(dt, "expected a type such as f32[4], found " + describe(dt));
    if (dt.is_ident("Ref") && (lex_.peek().is('{') || lex_.peek().is('<'))) {
      if (!is_ref)
        error_at(dt, "a mutable array (Ref{..}) here is not supported: rematkit reads refs the program makes "
                     "(mutable_array, new_ref), read and written whole, not refs as arguments or binders");
      if (lex_.peek().is('<')) lex_.read_angle_text();  // the ref's memory space
      expect('{');
      Type element = parse_type(sharding);
      expect('}');
      *is_ref = true;
      return element;
    }
    std::string name = dt.text;
    if (name == "key" && lex_.peek().is('<')) name += "<" + lex_.read_angle_text() + ">";  // key<fry>, key<rbg>
    auto dtype = parse_dtype(name);
    if (!dtype) {
      const bool known = kUnsupportedDtypes.count(dt.text) || name != dt.text;
      const std::string message = known ? "unsupported dtype '" + name + "' (" + std::string(kSupportedDtypes) + ")"
                                        : "unknown dtype '" + name + "'";
      if (!problems_) error_at(dt, message);
      problems_->push_back(lex_.where(dt).str() + ": " + message);
      dtype = stand_in_dtype(dt.text);
    }
    Type type{*dtype, {}, MemorySpace::kDevice};
    if (lex_.peek().is('<')) {
      lex_.next();
      Token space = lex_.next();
      if (space.is_ident("host") || space.is_ident("pinned_host")) type.space = MemorySpace::kPinnedHost;
      else if (!space.is_ident("device")) error_at(space, "unknown memory space " + describe(space));
      expect('>');
    }
    expect('[');
    std::string dims;  // as written, with each dim's mesh axes
    bool sharded = false;
    if (!lex_.peek().is(']')) {
      while (true) {
        Token d = lex_.next();
        // A size that is a variable: core.py's pp_aval of a DShapedArray (jax_dynamic_shapes).
        if (d.kind == Token::Kind::kIdent)
          error_at(d, "dynamic shapes (JAX's abstracted axes, 0.2.28-0.8.1) are not supported: the size '" + d.text +
                          "' is a variable; print the jaxpr with concrete sizes (no abstracted_axes)");
        if (d.kind != Token::Kind::kNumber || d.text.find_first_of(".e-") != std::string::npos)
          error_at(d, "expected a dimension size, found " + describe(d));
        type.shape.push_back(integer_value(d));
        dims += (dims.empty() ? "" : ",") + d.text;
        if (lex_.peek().is('@')) {
          lex_.next();
          dims += "@" + parse_mesh_axes();
          sharded = true;
        }
        if (lex_.peek().is(']')) break;
        if (lex_.peek().is(';')) {  // f32[4,512;x:8]: named axes (core.py's named_shape, JAX to 0.4.30)
          dims += ";" + parse_named_shape();
          sharded = true;
          break;
        }
        expect(',');
      }
    } else if (lex_.peek().is(';')) {
      dims += ";" + parse_named_shape();
      sharded = true;
    }
    expect(']');
    std::string marks;
    while (lex_.peek().is('{') && !lex_.peek_second().is_ident("lambda")) marks += parse_sharding_marks();
    if (sharding && (sharded || !marks.empty())) {
      *sharding = std::string(dtype_name(type.dtype)) + (type.space == MemorySpace::kPinnedHost ? "<host>" : "") +
                  "[" + dims + "]" + marks;
    }
    // A declared shape past int64 would overflow every byte count after it.
    try {
      (void)type.bytes();
    } catch (const Error& e) {
      error_at(dt, e.what());
    }
    return type;
  }

  // The named axes after ';' in a type, x:8,y:2 (a value per index of each, not a bigger array).
  std::string parse_named_shape() {
    expect(';');
    std::string named;
    while (!lex_.peek().is(']')) {
      const std::string axis = mesh_axis();
      expect(':');
      const Token size = lex_.next();
      if (size.kind != Token::Kind::kNumber) error_at(size, "expected a named axis size, found " + describe(size));
      named += (named.empty() ? "" : ",") + axis + ":" + std::to_string(integer_value(size));
      if (lex_.peek().is(',')) lex_.next();
      else if (!lex_.peek().is(']')) error_at(lex_.peek(), "expected ',' or ']' in a named shape, found " + describe(lex_.peek()));
    }
    return named;
  }

  // A dim's mesh axes after '@' (f32[8@x,4], f32[8@(x,y)]), as core.py's _get_shape_sharding_str
  // prints them (jax-v0.4.35 on).
  std::string parse_mesh_axes() {
    if (!lex_.peek().is('(')) return mesh_axis();
    lex_.next();
    std::string axes = "(" + mesh_axis();
    while (lex_.peek().is(',')) {
      lex_.next();
      axes += "," + mesh_axis();
    }
    expect(')');
    return axes + ")";
  }

  std::string mesh_axis() {
    Token t = lex_.next();
    if (t.kind != Token::Kind::kIdent) error_at(t, "expected a mesh axis name, found " + describe(t));
    return t.text;
  }

  // One block of the marks core.py's _vma_ur_str prints after a type: {V:i, U:x, R:(x,y)} (JAX 0.8.1
  // on; U_max/U_min too), and the forms before it: {U:x, A:y} (0.4.36-0.4.38), {i,j} (0.6.0),
  // {U:x}{(i,j)} (0.7.0-0.8.0). Each entry is [KIND ':'] AXES.
  std::string parse_sharding_marks() {
    expect('{');
    std::string marks = "{";
    while (!lex_.peek().is('}')) {
      if (marks.size() > 1) marks += ", ";
      if (lex_.peek().kind == Token::Kind::kIdent && lex_.peek_second().is(':')) {
        marks += lex_.next().text + ":";
        lex_.next();
      }
      // {x: 0}: a named axis and the dim it maps (xmap's axes, as JAX 0.4.27's sharded-types tests write them).
      if (lex_.peek().kind == Token::Kind::kNumber) marks += " " + std::to_string(integer_value(lex_.next()));
      else marks += parse_mesh_axes();
      if (lex_.peek().is(',')) lex_.next();
      else if (!lex_.peek().is('}')) error_at(lex_.peek(), "expected ',' or '}' in a sharding annotation, found " + describe(lex_.peek()));
    }
    lex_.next();
    return marks + "}";
  }

  // --- one jaxpr and its scope ----------------------------------------------------------------
  // A mutable array the program made (mutable_array, new_ref): its element type and the value it
  // holds at this point of the program. Reads and writes of the whole array are read as JAX's
  // discharge_state (jax/_src/state/discharge.py) turns them into values: the program becomes pure.
  struct RefState {
    Type type;
    Atom value;
  };

  struct Scope {
    Program* program;
    std::unordered_map<std::string, int> vars;
    std::unordered_map<std::string, RefState> refs;
  };

  int bind(Scope& scope, const Token& name, Type type, std::string sharding = "") {
    if (name.text != "_" && scope.vars.count(name.text))
      error_at(name, "variable '" + name.text + "' is defined twice");
    scope.program->vars.push_back(Var{name.text, std::move(type), std::move(sharding)});
    int index = static_cast<int>(scope.program->vars.size()) - 1;
    if (name.text != "_") scope.vars[name.text] = index;
    return index;
  }

  // A binder written without a type (JAX before 0.2.22: core.py's pp_jaxpr printed none) takes the
  // one its caller gives: a call's operand (`given`, in binder order) or, in the main jaxpr, --arg-types.
  int parse_binder(Scope& scope, const std::vector<Type>* given, bool main) {
    Token name = lex_.next();
    if (name.kind != Token::Kind::kIdent) error_at(name, "expected a variable, found " + describe(name));
    if (!lex_.peek().is(':')) {
      const size_t k = scope.program->constvars.size() + scope.program->invars.size();
      if (given && k < given->size()) return bind(scope, name, (*given)[k]);
      if (main && arg_types_ && arg_types_->count(name.text)) {
        used_arg_types_.insert(name.text);
        const int v = bind(scope, name, arg_types_->at(name.text));
        untyped_binders_[v] = {name, "given by --arg-types"};
        return v;
      }
      if (main && inferred_ && inferred_->count(name.text)) {
        const int v = bind(scope, name, inferred_->at(name.text));
        untyped_binders_[v] = {name, "inferred"};
        return v;
      }
      if (main && probe_) {
        const int v = bind(scope, name, Type{});
        untyped_binders_[v] = {name, ""};
        pending_.insert(v);
        return v;
      }
      error_at(name, "binder '" + name.text + "' has no type (JAX before 0.2.22 printed none): give it with --arg-types " +
                         name.text + ":f32[3],... or write it as " + name.text + ":f32[...]");
    }
    lex_.next();
    std::string sharding;
    Type type = parse_type(&sharding);
    return bind(scope, name, std::move(type), std::move(sharding));
  }

  // `given` types untyped binders (a call's operands); `main`: the file's jaxpr, which --arg-types types.
  Program parse_jaxpr(const std::vector<Type>* given = nullptr, bool main = false) {
    const NestingGuard nesting(jaxpr_depth_, kMaxProgramNesting, "programs", lex_.where(lex_.peek()));
    expect('{');
    expect_word("lambda");
    Program program;
    Scope scope{&program, {}, {}};
    if (main) main_program_ = &program;
    while (!lex_.peek().is(';')) program.constvars.push_back(parse_binder(scope, given, main));
    lex_.next();
    // jax-v0.1.58's core.py printed constvars ; freevars ; invars.
    if (lex_.peek().is(';'))
      error_at(lex_.peek(), "a second ';' in a jaxpr's binders: JAX before 0.1.59 printed constants ; free variables ; "
                            "arguments, which rematkit does not read (print it with a newer JAX)");
    while (!lex_.peek().is('.')) program.invars.push_back(parse_binder(scope, given, main));
    lex_.next();
    if (main && probe_ && pending_.empty()) throw NothingPending{};
    expect_word("let");
    while (!(lex_.peek().is_ident("in") && lex_.peek_second().is('('))) {
      if (lex_.peek().is(';')) {
        lex_.next();
        continue;
      }
      if (lex_.peek().kind == Token::Kind::kEnd) error_at(lex_.peek(), "unexpected end of file inside a jaxpr");
      if (!problems_) {
        parse_equation(scope);
        continue;
      }
      const int depth = lex_.depth();
      try {
        parse_equation(scope);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kBadInput) throw;
        problems_->push_back(e.what());
        skip_rest_of_equation(depth);
      }
    }
    lex_.next();  // in
    expect('(');
    while (!lex_.peek().is(')')) {
      program.outvars.push_back(parse_atom(scope, nullptr));
      if (lex_.peek().is(',')) lex_.next();
      else if (!lex_.peek().is(')')) error_at(lex_.peek(), "expected ',' or ')', found " + describe(lex_.peek()));
    }
    lex_.next();
    expect('}');
    return program;
  }

  // An operand: a variable of this scope or a literal (typed now if written with a type).
  // `untyped` collects untyped literals' positions so the equation can type them from context.
  Atom parse_atom(Scope& scope, bool* untyped) {
    Token t = lex_.next();
    if (t.is('[')) error_at(t, "elided constant '[...]' (print the jaxpr with its constants inlined)");
    if (t.kind == Token::Kind::kIdent && !is_number_word(t.text) && t.text != "True" && t.text != "False") {
      if (scope.refs.count(t.text) && !scope.vars.count(t.text))
        error_at(t, "the ref '" + t.text + "' is an operand here; rematkit reads refs only whole, through " + t.text +
                        "[...] and freeze, as discharge_state does");
      auto it = scope.vars.find(t.text);
      if (it == scope.vars.end()) error_at(t, "undefined variable '" + t.text + "'");
      return Atom::of_var(it->second);
    }
    Atom atom;
    const bool complex_literal = (t.kind == Token::Kind::kNumber || is_number_word(t.text)) && is_complex_literal(t.text);
    if (complex_literal) {  // a weak Python complex is c64 with x64 off, as JAX runs by default
      std::tie(atom.literal, atom.literal_imag) = complex_parts(t.text);
      atom.type = Type{DType::kC64, {}, MemorySpace::kDevice};
    } else if (t.kind == Token::Kind::kNumber || (t.kind == Token::Kind::kIdent && is_number_word(t.text))) {
      atom.literal = t.text == "nan" ? NAN : t.text == "inf" ? INFINITY : t.text == "-inf" ? -INFINITY
                                                                                        : float_value(t);
      bool integral = t.text.find_first_of(".eEn") == std::string::npos;
      atom.type = Type{integral ? DType::kI32 : DType::kF32, {}, MemorySpace::kDevice};
    } else if (t.kind == Token::Kind::kIdent) {
      atom.literal = t.text == "True" ? 1.0 : 0.0;
      atom.type = Type{DType::kBool, {}, MemorySpace::kDevice};
    } else {
      error_at(t, "expected a variable or a literal, found " + describe(t));
    }
    if (lex_.peek().is(':')) {
      lex_.next();
      Token type_start = lex_.peek();
      atom.type = parse_type();
      if (!atom.type.shape.empty()) error_at(type_start, "a literal must have a scalar type");
      if (complex_literal && !is_complex(atom.type.dtype))
        error_at(type_start, "the complex literal " + t.text + " needs a complex type (c64 or c128), not " +
                                 atom.type.str());
    } else if (untyped && (t.kind == Token::Kind::kNumber || is_number_word(t.text))) {
      *untyped = true;
      atom.type.shape.clear();
      atom.type.space = MemorySpace::kDevice;
      atom.type.dtype = complex_literal ? DType::kC64 : DType::kF32;  // provisional; typed from the equation below
      atom.var = -2;                  // marks "untyped" until typed
    }
    round_literal(atom);
    return atom;
  }

  // An equation with no outputs starts with its primitive: JAX 0.4.22 on prints no '=' for it
  // (core.py, _pp_eqn), earlier JAX a bare '='.
  bool no_outputs_follow() {
    const Token& t = lex_.peek();
    return t.is('=') || (t.kind == Token::Kind::kIdent && lex_.peek_second().is('[') && lookup_prim(t.text));
  }

  void parse_equation(Scope& scope) {
    std::vector<Out> outs;
    const bool ref_update = lex_.peek().kind == Token::Kind::kIdent && lex_.peek_second().is('[') &&
                            (scope.refs.count(lex_.peek().text) || scope.vars.count(lex_.peek().text));
    while (!ref_update && (!no_outputs_follow() || !outs.empty())) {
      if (lex_.peek().is('=') || lex_.peek().is_op("<-") || lex_.peek().is(',')) break;
      Token name = lex_.next();
      if (name.kind != Token::Kind::kIdent)
        error_at(name, "expected an equation (VAR:TYPE = primitive ...), found " + describe(name));
      Out out{name, {}, {}, false};
      if (lex_.peek().is(':')) {  // untyped before JAX 0.2.22: typed from the equation below
        lex_.next();
        out.type = parse_type(&out.sharding, &out.ref);
        out.typed = true;
      }
      outs.push_back(std::move(out));
    }
    auto rhs = [&] {
      if (ref_update || lex_.peek().is_op("<-") || lex_.peek().is(',') || refs_form_follows(outs))
        return parse_ref_equation(scope, outs);
      for (const Out& out : outs)
        if (out.ref) error_at(out.name, "a ref as the output of '" + lex_.peek_second().text + "' is not supported (only "
                                        "mutable_array and new_ref make one here)");
      parse_equation_rhs(scope, outs);
    };
    if (!problems_) return rhs();
    const int depth = lex_.depth();
    try {
      rhs();
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kBadInput) throw;
      problems_->push_back(e.what());
      skip_rest_of_equation(depth);
      // Its outputs stay defined, as declared, so that later equations are checked against them.
      for (const Out& out : outs)
        if (out.name.text == "_" || !scope.vars.count(out.name.text)) bind(scope, out.name, out.type, out.sharding);
    }
  }

  // Skips to the end of the equation being read: the next ';', 'in (', binder or '}' outside its
  // brackets. Always moves on at least one token.
  void skip_rest_of_equation(int depth) {
    bool moved = false;
    while (lex_.peek().kind != Token::Kind::kEnd) {
      const Token& t = lex_.peek();
      const bool at_end = t.is(';') || t.is('}') || (t.is_ident("in") && lex_.peek_second().is('(')) ||
                          (t.kind == Token::Kind::kIdent && lex_.peek_second().is(':'));
      if (lex_.depth() <= depth && at_end && moved) return;
      if (lex_.depth() < depth) return;
      lex_.next();
      moved = true;
    }
  }

  struct Out {
    Token name;
    Type type;
    std::string sharding;
    bool typed = true;
    bool ref = false;  // typed Ref{..}: `type` is its element type
  };

  // --- mutable arrays ------------------------------------------------------------------------
  // state/primitives.py's pp rules print a whole-array read `c:f32[3] <- a[...]`, a store
  // `a[...] <- b`, a swap keeping the old value `d:f32[3], a[...] <- a[...], b`, and an accumulation
  // `a[...] += b` (`[...]` from 0.8.0; `[:, :]` per dim, `[]` for a scalar, before). They are read
  // as discharge_state reads them: the ref's current value flows on, an accumulation is an add.

  // Whether the equation after `outs` makes or freezes a ref: `= mutable_array ..`, `= new_ref ..`,
  // `= freeze a`.
  bool refs_form_follows(const std::vector<Out>& outs) {
    if (!lex_.peek().is('=') || outs.size() != 1) return false;
    const Token& prim = lex_.peek_second();
    return prim.is_ident("mutable_array") || prim.is_ident("new_ref") || prim.is_ident("freeze") ||
           prim.is_ident("empty_ref");
  }

  RefState& ref_named(Scope& scope, const Token& name) {
    auto it = scope.refs.find(name.text);
    if (it == scope.refs.end())
      error_at(name, "'" + name.text + "' is not a ref (" + (scope.vars.count(name.text) ? "a value" : "undefined") +
                         "), so it has no [...] to read or write");
    return it->second;
  }

  // `[...]`, or `[:, ..]` with one ':' per dim, after a ref's name: the whole array. An index that
  // picks part of it (a[1], a[:, 2:4]) is refused.
  void expect_whole_index(const Token& name, const RefState& ref) {
    expect('[');
    std::string index;
    int colons = 0;
    bool other = false;
    while (!lex_.peek().is(']')) {
      const Token t = lex_.next();
      if (t.kind == Token::Kind::kEnd) error_at(t, "unexpected end of file in the index of ref '" + name.text + "'");
      index += t.text;
      colons += t.is(':');
      other |= !t.is(':') && !t.is(',') && !t.is('.');
    }
    lex_.next();
    const bool whole = !other && (index == "..." || (colons == ref.type.rank() && index.find('.') == std::string::npos));
    if (!whole)
      error_at(name, "'" + name.text + "[" + index + "]' reads or writes part of a ref; rematkit reads refs whole "
                     "(" + name.text + "[...]), as discharge_state does");
  }

  // A value for a ref of `type`: an operand of that type (an untyped literal takes it).
  Atom ref_operand(Scope& scope, const Type& type, const std::string& what) {
    const Token at = lex_.peek();
    bool untyped = false;
    Atom a = parse_atom(scope, &untyped);
    if (untyped) {
      a.var = -1;
      if (literal_fits(a, type.dtype)) a.type.dtype = type.dtype;
      round_literal(a);
    }
    const Type& got = scope.program->type_of(a);
    if (got.dtype != type.dtype || got.shape != type.shape)
      error_at(at, what + " " + got.str() + " where the ref holds " + type.str());
    return a;
  }

  // An output that names the value `v` (what a read gives), checked against its declared type.
  void name_value(Scope& scope, const Out& out, const Atom& v, const Type& type, const SourceLocation& where) {
    if (out.ref) error_at(out.name, "a read of a ref gives its value, not a ref: '" + out.name.text + "' is typed Ref{..}");
    if (out.typed && (out.type.dtype != type.dtype || out.type.shape != type.shape))
      error_at(out.name, "'" + out.name.text + "' is declared " + out.type.str() + " but the ref holds " + type.str());
    if (out.name.text == "_") return;
    if (v.is_literal()) {  // a ref made from a literal: its value becomes a variable through a copy
      Equation copy;
      copy.prim = Prim::kCopy;
      copy.inputs = {v};
      copy.where = where;
      copy.outputs = {bind(scope, out.name, type)};
      scope.program->eqns.push_back(std::move(copy));
      return;
    }
    if (scope.vars.count(out.name.text) || scope.refs.count(out.name.text))
      error_at(out.name, "variable '" + out.name.text + "' is defined twice");
    scope.vars[out.name.text] = v.var;
  }

  void parse_ref_equation(Scope& scope, std::vector<Out>& outs) {
    if (lex_.peek().is('=')) {  // r:Ref{T} = mutable_array[..] v, c:T = freeze r
      lex_.next();
      const Token prim = lex_.next();
      if (lex_.peek().is('[')) skip_bracketed();  // memory_space=None kind=.. : no bearing on the values
      if (prim.is_ident("empty_ref"))
        error_at(prim, "empty_ref makes a ref with no value yet; rematkit reads refs made from a value (new_ref)");
      if (prim.is_ident("freeze")) {
        const Token name = lex_.next();
        const RefState& ref = ref_named(scope, name);
        return name_value(scope, outs[0], ref.value, ref.type, lex_.where(prim));
      }
      if (!outs[0].ref) error_at(outs[0].name, prim.text + " makes a ref: '" + outs[0].name.text + "' should be typed Ref{..}");
      if (scope.vars.count(outs[0].name.text) || scope.refs.count(outs[0].name.text))
        error_at(outs[0].name, "variable '" + outs[0].name.text + "' is defined twice");
      const Atom init = ref_operand(scope, outs[0].type, "the initial value is");
      scope.refs[outs[0].name.text] = RefState{outs[0].type, init};
      return;
    }
    if (lex_.peek().is_op("<-")) {  // c:T <- r[...]
      lex_.next();
      if (outs.size() != 1) error_at(lex_.peek(), "a ref read gives one value");
      const Token name = lex_.next();
      const RefState& ref = ref_named(scope, name);
      expect_whole_index(name, ref);
      return name_value(scope, outs[0], ref.value, ref.type, lex_.where(name));
    }
    const bool keeps_old = lex_.peek().is(',');  // d:T, r[...] <- r[...], v
    if (keeps_old) {
      lex_.next();
      if (outs.size() != 1) error_at(lex_.peek(), "a ref swap gives one value");
    }
    const Token name = lex_.next();
    RefState& ref = ref_named(scope, name);
    expect_whole_index(name, ref);
    const Token op = lex_.next();
    if (!op.is_op("<-") && !(op.is_op("+=") && !keeps_old))
      error_at(op, "expected '<-' or '+=' after '" + name.text + "[...]', found " + describe(op));
    if (keeps_old) {
      const Token again = lex_.next();
      if (again.text != name.text) error_at(again, "a swap reads the ref it writes, '" + name.text + "'");
      expect_whole_index(again, ref);
      expect(',');
      name_value(scope, outs[0], ref.value, ref.type, lex_.where(name));
    }
    const Atom v = ref_operand(scope, ref.type, op.is_op("+=") ? "adding" : "storing");
    if (op.is_op("<-")) {
      ref.value = v;
      return;
    }
    Equation add;  // discharge_state's addupdate: the ref's value plus v
    add.prim = Prim::kAdd;
    add.inputs = {ref.value, v};
    add.where = lex_.where(name);
    Token sum = name;
    for (int n = 1; sum.text == name.text || scope.vars.count(sum.text) || scope.refs.count(sum.text); ++n)
      sum.text = name.text + "_" + std::to_string(n);
    add.outputs = {bind(scope, sum, ref.type)};
    ref.value = Atom::of_var(add.outputs[0]);
    scope.program->eqns.push_back(std::move(add));
  }

  // Skips a balanced [..] (params the parser does not keep).
  void skip_bracketed() {
    const int depth = lex_.depth();
    expect('[');
    while (lex_.depth() > depth) {
      if (lex_.peek().kind == Token::Kind::kEnd) error_at(lex_.peek(), "unexpected end of file inside [..]");
      lex_.next();
    }
  }


  void parse_equation_rhs(Scope& scope, std::vector<Out>& outs) {
    if (lex_.peek().is('=')) lex_.next();
    Token prim_token = lex_.next();
    if (prim_token.kind != Token::Kind::kIdent) error_at(prim_token, "expected a primitive, found " + describe(prim_token));
    Equation eqn;
    const bool hi = prim_token.is_ident("call_hi_primitive");
    auto prim = hi ? std::optional<Prim>(parse_hi_primitive(prim_token, eqn.params)) : lookup_prim(prim_token.text);
    if (!prim) {
      const auto versions = detail::versioned_primitive(prim_token.text);
      error_at(prim_token, "unknown primitive '" + prim_token.text + "'" + (versions ? " (" + std::string(*versions) + ")" : ""));
    }
    eqn.where = lex_.where(prim_token);
    if (outs.empty() && !is_effect(*prim)) error_at(prim_token, "an equation needs at least one output");
    std::vector<DeferredBody> deferred;
    if (!hi && lex_.peek().is('[') && !lex_.peek_second().is('.')) eqn.params = parse_params(*prim, &deferred);
    // Operands run until the next binder (IDENT ':'), an 'in (' or a ';'; in JAX's untyped form
    // (before 0.2.22) until a name not yet defined, the next equation's first output.
    const bool untyped_form = !outs.empty() && !outs[0].typed;
    std::vector<bool> untyped;
    while (true) {
      const Token& t = lex_.peek();
      if (t.is(';') || t.kind == Token::Kind::kEnd || t.is('}')) break;
      if (t.is_ident("in") && lex_.peek_second().is('(')) break;
      if (t.kind == Token::Kind::kIdent && lex_.peek_second().is(':')) break;
      if (t.is('=') || (t.kind == Token::Kind::kIdent && !scope.vars.count(t.text) && no_outputs_follow())) break;
      if (t.kind == Token::Kind::kIdent && scope.refs.count(t.text) && lex_.peek_second().is('[')) break;  // r[...] <- v
      if (untyped_form && t.kind == Token::Kind::kIdent && !scope.vars.count(t.text) && !is_number_word(t.text) &&
          t.text != "True" && t.text != "False")
        break;
      bool is_untyped = false;
      eqn.inputs.push_back(parse_atom(scope, &is_untyped));
      untyped.push_back(is_untyped);
    }
    eqn.prim = *prim;
    if (eqn.prim == Prim::kCustomJvpCall && is_relu(eqn.params)) eqn.prim = Prim::kRelu;
    if (eqn.prim == Prim::kRandomSplit && !eqn.params.find("shape")) {  // JAX before 0.4.14 printed count=N
      if (const ParamValue* count = eqn.params.find("count"); count && count->kind == ParamValue::Kind::kInt)
        eqn.params.set("shape", ParamValue::of_tuple({*count}));
    }
    if (eqn.prim == Prim::kPjit && is_relu_call(eqn.params)) eqn.prim = Prim::kRelu;
    if (eqn.prim == Prim::kRelu) eqn.params = Params{};
    if (scope.program == main_program_ && !untyped_binders_.empty() && !use_types_binders(*scope.program, eqn, outs)) {
      for (const Out& out : outs) pending_.insert(bind(scope, out.name, out.type, out.sharding));  // a probe's only
      return;
    }
    if (eqn.prim == Prim::kBroadcastInDim) {
      // JAX prints no shape (the output binder has it: lax.py's _broadcast_in_dim_pp_rule), and no
      // broadcast_dimensions when they are empty.
      if (!eqn.params.find("shape")) {
        if (untyped_form) error_at(prim_token, "broadcast_in_dim has no shape= and its output no type");
        eqn.params.set("shape", ParamValue::of_ints(outs[0].type.shape));
      }
      if (!eqn.params.find("broadcast_dimensions")) eqn.params.set("broadcast_dimensions", ParamValue::of_tuple({}));
    }
    type_untyped_literals(eqn, untyped, *scope.program,
                          outs.empty() || untyped_form ? std::nullopt : std::optional<Type>(outs[0].type));
    for (const DeferredBody& body : deferred) read_deferred_body(*scope.program, eqn, body);
    // Params the table does not list for the primitive are dropped; what is kept prints back.
    eqn.params = schema_params(eqn.prim, std::move(eqn.params));
    if (untyped_form) type_outputs(*scope.program, eqn, outs);
    if (eqn.prim == Prim::kAllToAll && !eqn.params.find("axis_size") && !untyped_form) read_all_to_all_size(*scope.program, eqn, outs);
    // An optimization_barrier of n values, and psum and its kin of n (multiple_results to JAX
    // 0.8.1), are n equations here: each output depends on its own operand only.
    const bool elementwise_collective = eqn.prim == Prim::kPsum || eqn.prim == Prim::kPmax || eqn.prim == Prim::kPmin ||
                                        eqn.prim == Prim::kPvary || eqn.prim == Prim::kPbroadcast;
    if ((eqn.prim == Prim::kOptimizationBarrier || elementwise_collective) && eqn.inputs.size() != 1)
      return split_barrier(scope, eqn, outs);
    if (eqn.prim == Prim::kThreefry2x32 && !eqn.params.find("output")) return one_equation_per_output(scope, eqn, outs, 2);
    if (eqn.prim == Prim::kSort && !eqn.params.find("output") && eqn.inputs.size() > 1)
      return one_equation_per_output(scope, eqn, outs, eqn.inputs.size());
    if (eqn.prim == Prim::kSplit && !eqn.params.find("output"))
      return one_equation_per_output(scope, eqn, outs, param_ints(eqn.params, "sizes", eqn.where).size());
    for (Out& out : outs) eqn.outputs.push_back(bind(scope, out.name, out.type, out.sharding));
    scope.program->eqns.push_back(std::move(eqn));
  }

  // call_hi_primitive (jax/_src/hijax.py, jax-v0.8.0 on) has one param, _prim, printed by
  // VJPHiPrimitive.__repr__ as CLASS[{'key': value, ...}], its params dict in insertion order.
  // jax_remat3 (jax/_src/ad_checkpoint.py, jax-v0.10.2 on) prints jax.checkpoint as RematTraced
  // ('jaxpr', 'policy', and after 0.11.0 'prevent_cse'; closed-over constants are the jaxpr's
  // leading binders, per _remat3's pe.separate_consts) and checkpoint_name as CheckpointName ('name').
  Prim parse_hi_primitive(const Token& prim_token, Params& params) {
    if (!lex_.peek().is('[')) error_at(prim_token, "call_hi_primitive has no [_prim=...]");
    lex_.next();
    const Token key = lex_.next();
    if (!key.is_ident("_prim")) error_at(key, "expected _prim= in call_hi_primitive, found " + describe(key));
    expect('=');
    const Token cls = lex_.next();
    if (cls.kind != Token::Kind::kIdent) error_at(cls, "expected a hijax primitive's class, found " + describe(cls));
    if (const auto why = detail::refused_hi_primitive(cls.text))
      error_at(cls, "call_hi_primitive of " + cls.text + " is not supported: " + std::string(*why));
    Prim prim = Prim::kCheckpoint;
    if (cls.text == "CheckpointName") prim = Prim::kName;
    else if (cls.text != "RematTraced")
      error_at(cls, "call_hi_primitive of " + cls.text + " is not supported: rematkit reads only jax_remat3's " +
                        "RematTraced and CheckpointName of JAX's hijax primitives (0.8.0 on)");
    expect('[');
    expect('{');
    while (!lex_.peek().is('}')) {
      const Token k = lex_.next();
      if (k.kind != Token::Kind::kString) error_at(k, "expected a quoted key of " + cls.text + "'s params, found " + describe(k));
      expect(':');
      params.set(k.text, parse_value());
      if (lex_.peek().is(',')) lex_.next();
      else if (!lex_.peek().is('}')) error_at(lex_.peek(), "expected ',' or '}', found " + describe(lex_.peek()));
    }
    lex_.next();
    expect(']');
    expect(']');
    if (prim == Prim::kCheckpoint) {
      if (!params.find("jaxpr")) error_at(cls, "RematTraced has no 'jaxpr'");
      const ParamValue* policy = params.find("policy");
      const ParamValue printed = policy ? *policy : ParamValue::none();
      params.set("policy", detail::remat3_policy(printed));
      if (detail::remat3_ignores_callable(printed)) params.set("ignored_callable_policy", printed);
    }
    return prim;
  }

  // optimization_barrier of n values is n identities here: it only keeps XLA from moving work
  // across it, and rematkit moves nothing; each output still prints as the barrier's. So is a
  // psum of n values n psums (parallel.py binds one for all to save launches, not to mix them).
  void split_barrier(Scope& scope, const Equation& eqn, const std::vector<Out>& outs) {
    if (outs.size() != eqn.inputs.size())
      fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " of " + std::to_string(eqn.inputs.size()) +
                             " operand(s) binds " + std::to_string(outs.size()) + " output(s)");
    for (size_t i = 0; i < outs.size(); ++i) {
      Equation one = eqn;
      one.inputs = {eqn.inputs[i]};
      one.outputs = {bind(scope, outs[i].name, outs[i].type, outs[i].sharding)};
      scope.program->eqns.push_back(std::move(one));
    }
  }

  // all_to_all prints no axis size (parallel.py binds axis_name only): the typed result has it,
  // as the concat dim's growth.
  void read_all_to_all_size(const Program& program, Equation& eqn, const std::vector<Out>& outs) {
    const ParamValue* concat = eqn.params.find("concat_axis");
    if (outs.size() != 1 || eqn.inputs.size() != 1 || !concat || concat->kind != ParamValue::Kind::kInt) return;
    const Type& in = program.type_of(eqn.inputs[0]);
    const Type& out = outs[0].type;
    const int64_t d = concat->integer;
    if (d < 0 || d >= in.rank() || in.rank() != out.rank() || in.shape[static_cast<size_t>(d)] == 0) return;
    if (out.shape[static_cast<size_t>(d)] % in.shape[static_cast<size_t>(d)] != 0)
      fail_at(eqn.where, "all_to_all's result " + out.str() + " does not grow its concat_axis " + std::to_string(d) +
                             " of " + in.str() + " by a whole number of blocks");
    eqn.params.set("axis_size", ParamValue::of_int(out.shape[static_cast<size_t>(d)] / in.shape[static_cast<size_t>(d)]));
  }

  // threefry2x32's two words and split's pieces: here one equation per output (output=0, 1, ...),
  // each a value of its own computed from the same operands.
  void one_equation_per_output(Scope& scope, const Equation& eqn, const std::vector<Out>& outs, size_t n) {
    if (outs.size() != n)
      fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " binds " + std::to_string(n) + " output(s), not " +
                             std::to_string(outs.size()));
    for (size_t i = 0; i < n; ++i) {
      Equation one = eqn;
      one.params.set("output", ParamValue::of_int(static_cast<int64_t>(i)));
      one.outputs = {bind(scope, outs[i].name, outs[i].type, outs[i].sharding)};
      scope.program->eqns.push_back(std::move(one));
    }
  }

  // An untyped literal takes the dtype of the equation's first variable operand (the predicate
  // of select_n aside), or of its output when it has no variable operand.
  void type_untyped_literals(Equation& eqn, const std::vector<bool>& untyped, const Program& program,
                             const std::optional<Type>& out_type) {
    std::optional<DType> context;
    for (size_t i = 0; i < eqn.inputs.size(); ++i) {
      if (eqn.prim == Prim::kSelectN && i == 0) continue;
      if (!eqn.inputs[i].is_literal()) {
        context = program.vars[eqn.inputs[i].var].type.dtype;
        break;
      }
    }
    if (!context && out_type && !is_comparison(eqn.prim)) context = out_type->dtype;
    // A call's literal operand (pjit[name=_take] e 0) has the type of the binder it binds; so has
    // a loop's or a branch's (a literal initial carry, a while's counter).
    const std::vector<DType> bound = binder_dtypes(eqn);
    for (size_t i = 0; i < eqn.inputs.size(); ++i) {
      Atom& a = eqn.inputs[i];
      if (!untyped[i]) continue;
      a.var = -1;
      if (i < bound.size() && literal_fits(a, bound[i])) a.type.dtype = bound[i];
      else if (context && literal_fits(a, *context)) a.type.dtype = *context;
      round_literal(a);
    }
  }

  static bool in_schema(Prim prim, const std::string& key) {
    const PrimInfo& info = prim_info(prim);
    for (size_t i = 0; i < info.num_params; ++i)
      if (info.params[i].name == key) return true;
    return false;
  }

  // A param the schema keeps as its printed text (a Mesh or HloSharding repr).
  static bool raw_in_schema(Prim prim, const std::string& key) {
    const PrimInfo& info = prim_info(prim);
    for (size_t i = 0; i < info.num_params; ++i)
      if (info.params[i].name == key) return info.params[i].kind == ParamKind::kRaw;
    return false;
  }

  static bool is_relu_call(const Params& params) {
    const ParamValue* name = params.find("name");
    return name && (name->kind == ParamValue::Kind::kIdent || name->kind == ParamValue::Kind::kString) &&
           name->text == "relu";
  }

  // jax.nn.relu's custom_jvp_call (named relu since JAX 0.6.1, a pjit[name=relu] body before) is
  // the relu primitive, whose rule is JAX's custom JVP.
  bool is_relu(const Params& params) const {
    if (is_relu_call(params)) return true;
    const Program* body = body_of(params);
    return body && body->eqns.size() == 1 && body->eqns[0].prim == Prim::kRelu;
  }

  // A call's body: its jaxpr= or call_jaxpr= param, written inline or naming a shared sub-program.
  const Program* body_of(const Params& params) const {
    for (const char* key : {"jaxpr", "call_jaxpr"})
      if (const ParamValue* v = params.find(key))
        if (const Program* p = resolved(*v)) return p;
    return nullptr;
  }

  // The dtypes of the binders an equation's operands bind, as far as its sub-programs say.
  std::vector<DType> binder_dtypes(const Equation& eqn) const {
    std::vector<DType> dtypes;
    auto add = [&](const Program* p, size_t from, size_t to) {
      if (!p) return;
      std::vector<int> binders = p->constvars;
      binders.insert(binders.end(), p->invars.begin(), p->invars.end());
      for (size_t i = from; i < std::min(to, binders.size()); ++i) dtypes.push_back(p->vars[binders[i]].type.dtype);
    };
    if (has_body(eqn.prim) || eqn.prim == Prim::kScan) add(body_of(eqn.params), 0, SIZE_MAX);
    if (eqn.prim == Prim::kCond) {
      dtypes.push_back(DType::kI32);
      const ParamValue* branches = eqn.params.find("branches");
      if (branches && branches->is_sequence() && !branches->items.empty()) add(resolved(branches->items[0]), 0, SIZE_MAX);
    }
    if (eqn.prim == Prim::kWhile) {
      const ParamValue* n = eqn.params.find("cond_nconsts");
      const size_t cond_nconsts = n && n->kind == ParamValue::Kind::kInt && n->integer >= 0 ? static_cast<size_t>(n->integer) : 0;
      const Program* cond = body_of_param(eqn.params, "cond_jaxpr");
      const Program* body = body_of_param(eqn.params, "body_jaxpr");
      if (cond && body && cond->invars.size() >= cond_nconsts) {
        add(cond, 0, cond_nconsts);
        add(body, 0, SIZE_MAX);
      }
    }
    return dtypes;
  }

  const Program* body_of_param(const Params& params, const char* key) const {
    const ParamValue* v = params.find(key);
    return v ? resolved(*v) : nullptr;
  }

  const Program* resolved(const ParamValue& v) const {
    if (v.kind == ParamValue::Kind::kProgram) return v.program.get();
    if (v.kind == ParamValue::Kind::kIdent && shared_.count(v.text)) return shared_.at(v.text).get();
    return nullptr;
  }

  // A call's body under an older name is read as the name the schema keeps, so the body is read
  // (and its errors reported) as one: call_jaxpr of xla_call (jax.jit to 0.4.3, jax-v0.4.3
  // jax/_src/interpreters/xla.py) and of remat_call (jax.checkpoint to 0.3.15, jax-v0.3.15
  // jax/interpreters/partial_eval.py), and custom_vjp_call_jaxpr's fun_jaxpr.
  static std::string param_key(Prim prim, const std::string& key) {
    if (has_body(prim) && key != body_param(prim) && (key == "call_jaxpr" || key == "fun_jaxpr"))
      return std::string(body_param(prim));
    return key;
  }

  // --- JAX's untyped form (before 0.2.22) ---------------------------------------------------
  // The types a use of operands determines exactly, by operand position, from JAX's type rules; only
  // where the rule leaves one type. Binary elementwise ops determine none: lax.py's
  // _broadcasting_shape_rule (jax-v0.2.0 jax/lax/lax.py, jax-v0.2.21 jax/_src/lax/lax.py) leaves
  // rank-0 operands out and _try_broadcast_shapes lets 1-sized axes broadcast, so `add a b` with b
  // f32[8] leaves a f32[8], f32[1] or f32[]; and JAX of that era printed literals untyped
  // (jax-v0.2.21 jax/core.py, Literal.__repr__). Neither do reshape, broadcast_in_dim or pad
  // (_pad_shape_rule ignores padding_value's shape).
  std::vector<std::pair<size_t, Type>> uses_determine(const Equation& eqn, const std::vector<Out>& outs) const {
    std::vector<std::pair<size_t, Type>> found;
    // standard_unop at jax-v0.2.21 jax/_src/lax/lax.py: shape rule _attrgetter('shape') and
    // unop_dtype_rule with result_dtype _identity, so a typed output is its operand's type.
    static constexpr Prim kSameTypeUnops[] = {Prim::kNeg,  Prim::kSign,  Prim::kFloor, Prim::kCeil,  Prim::kRound,
                                              Prim::kExp,  Prim::kLog,   Prim::kExpm1, Prim::kLog1p, Prim::kTanh,
                                              Prim::kSin,  Prim::kCos,   Prim::kTan,   Prim::kSqrt,  Prim::kRsqrt,
                                              Prim::kErf,  Prim::kErfc,  Prim::kErfInv};
    if (std::find(std::begin(kSameTypeUnops), std::end(kSameTypeUnops), eqn.prim) != std::end(kSameTypeUnops) &&
        eqn.inputs.size() == 1 && outs.size() == 1 && outs[0].typed)
      found.push_back({0, outs[0].type});
    // jax/_src/lax/lax.py's _select_shape_rule and _select_dtype_rule (select at jax-v0.2.21,
    // select_n's cases later): the cases have one shape and one dtype.
    if (eqn.prim == Prim::kSelectN)
      for (size_t i = 1; i < eqn.inputs.size(); ++i)
        if (eqn.inputs[i].var >= 0 && !pending_.count(eqn.inputs[i].var)) {
          for (size_t j = 1; j < eqn.inputs.size(); ++j)
            if (j != i) found.push_back({j, main_program_->vars[eqn.inputs[i].var].type});
          break;
        }
    return found;
  }

  // Types pending binders from what this equation determines, and checks the types of the other
  // untyped binders against it (at the binder). False when an operand is still pending (a probe).
  bool use_types_binders(Program& program, const Equation& eqn, const std::vector<Out>& outs) {
    for (const auto& [i, type] : uses_determine(eqn, outs)) {
      const int v = eqn.inputs[i].var;
      auto binder = untyped_binders_.find(v);
      if (binder == untyped_binders_.end()) continue;
      if (pending_.erase(v)) {
        program.vars[v].type = type;
        found_[binder->second.first.text] = type;
        binder->second.second = "inferred";
      } else if (program.vars[v].type != type) {
        const SourceLocation use = eqn.where;
        error_at(binder->second.first, "binder '" + binder->second.first.text + "' is " + program.vars[v].type.str() +
                                           " (" + binder->second.second + "), but its use by " +
                                           std::string(prim_name(eqn.prim)) + " at " + std::to_string(use.line) + ":" +
                                           std::to_string(use.column) + " makes it " + type.str());
      }
    }
    for (const Atom& a : eqn.inputs)
      if (a.var >= 0 && pending_.count(a.var)) return false;
    return true;
  }

  // A call's body whose binders have no types, read once the call's operands give them.
  struct DeferredBody {
    std::string key;
    detail::Lexer at;
  };

  // Whether the value ahead is a jaxpr whose binders are written without types.
  bool untyped_jaxpr_follows() const {
    detail::Lexer look = lex_;
    if (!look.next().is('{') || !look.next().is_ident("lambda")) return false;
    while (look.peek().is(';')) look.next();
    if (look.peek().kind != Token::Kind::kIdent) return false;
    look.next();
    return !look.peek().is(':');
  }

  void read_deferred_body(const Program& program, Equation& eqn, const DeferredBody& body) {
    std::vector<Type> operands;
    for (const Atom& a : eqn.inputs) operands.push_back(program.type_of(a));
    if (is_mapped_call(eqn.prim)) {  // the body's binders are one device's blocks of the operands
      const Mesh mesh = mapped_call_mesh(eqn);
      const std::vector<MappedValue> blocks = mapped_call_values(eqn, false, operands.size());
      for (size_t i = 0; i < operands.size(); ++i)
        operands[i] = mapped_value_type(operands[i], blocks[i], mesh, true, eqn.where, "operand " + std::to_string(i + 1));
    }
    const detail::Lexer after = lex_;
    lex_ = body.at;
    std::shared_ptr<Program> sub;
    try {
      sub = std::make_shared<Program>(parse_jaxpr(&operands));
    } catch (const Error&) {
      lex_ = after;  // so that check goes on after the equation, not inside its body
      throw;
    }
    lex_ = after;
    eqn.params.set(body.key, ParamValue::of_program(std::move(sub)));
  }

  // Outputs written without types take the ones the equation computes (a call's: its body's).
  void type_outputs(const Program& program, const Equation& eqn, std::vector<Out>& outs) {
    const std::string prim(prim_name(eqn.prim));
    if (is_control_flow(eqn.prim))
      fail_at(eqn.where, prim + "'s outputs have no types, which rematkit cannot work out for scan, cond or while: "
                                "write them as NAME:TYPE");
    std::vector<Type> types;
    if (has_body(eqn.prim)) {
      const Program* body = body_of(eqn.params);
      if (!body) fail_at(eqn.where, prim + "'s outputs have no types, and its body is not written inline to give them");
      for (const Atom& a : body->outvars) types.push_back(body->type_of(a));
    } else if (is_mapped_call(eqn.prim)) {  // the body's results joined over the mesh
      const ParamValue* b = eqn.params.find(std::string(body_param(eqn.prim)));
      if (!b || !b->program) fail_at(eqn.where, prim + "'s outputs have no types, and its body is not written inline to give them");
      const Mesh mesh = mapped_call_mesh(eqn);
      const std::vector<MappedValue> joined = mapped_call_values(eqn, true, b->program->outvars.size());
      for (size_t k = 0; k < joined.size(); ++k)
        types.push_back(mapped_value_type(b->program->type_of(b->program->outvars[k]), joined[k], mesh, false, eqn.where,
                                          "result " + std::to_string(k + 1)));
    } else {
      std::vector<Type> inputs;
      for (const Atom& a : eqn.inputs) inputs.push_back(program.type_of(a));
      types = infer_types(eqn.prim, eqn.params, inputs, eqn.where);
    }
    if (types.size() != outs.size())
      fail_at(eqn.where, prim + " computes " + std::to_string(types.size()) + " value(s), the equation binds " +
                             std::to_string(outs.size()));
    for (size_t i = 0; i < outs.size(); ++i)
      if (!outs[i].typed) outs[i].type = types[i];
  }

  // --- params ---------------------------------------------------------------------------------
  // A param the schema keeps must read as a value; one it drops (in_shardings=..., which older JAX
  // printed as GSPMDSharding({devices=[8,1,1]0,1,...})) is skipped as raw text if it does not.
  // A call's untyped body goes to `deferred`, to be read once the operands are.
  Params parse_params(Prim prim, std::vector<DeferredBody>* deferred = nullptr) {
    expect('[');
    Params params;
    while (!lex_.peek().is(']')) {
      Token key = lex_.next();
      if (key.kind != Token::Kind::kIdent) error_at(key, "expected a parameter name, found " + describe(key));
      key.text = param_key(prim, key.text);
      expect('=');
      if (is_host_call(prim) && key.text == "result_avals") {
        params.entries.emplace_back(key.text, parse_result_avals());
        if (lex_.peek().is(',')) lex_.next();
        continue;
      }
      // debugging.py prints debug_print's format string bare; rematkit prints it back quoted.
      if (prim == Prim::kDebugCallback && key.text == "fmt" && !lex_.string_follows()) {
        params.entries.emplace_back(key.text, ParamValue::of_string(lex_.read_raw_until("has_placeholders=")));
        continue;
      }
      if (detail::Lexer look = lex_; look.peek().is_ident("Wrapped")) {  // a copy: skip_raw_value needs lex_ unbuffered
        const Token wrapped = look.next();
        if (look.peek().is_ident("function")) error_at(wrapped, key.text + "= " + std::string(detail::kWrappedFunParam));
      }
      if (deferred && (has_body(prim) || is_mapped_call(prim)) && key.text == body_param(prim) && untyped_jaxpr_follows()) {
        deferred->push_back({key.text, lex_});
        lex_.skip_raw_value();
        if (lex_.peek().is(',')) lex_.next();
        continue;
      }
      if (!in_schema(prim, key.text)) {
        const detail::Lexer before = lex_;
        try {
          params.entries.emplace_back(key.text, parse_value());
        } catch (const Error&) {
          lex_ = before;
          lex_.skip_raw_value();
        }
        if (lex_.peek().is(',')) lex_.next();
        continue;
      }
      if (raw_in_schema(prim, key.text)) params.entries.emplace_back(key.text, ParamValue::of_raw(lex_.read_raw_value()));
      else params.entries.emplace_back(key.text, parse_value());
      if (lex_.peek().is(',')) lex_.next();
    }
    lex_.next();
    return params;
  }

  // callback.py prints result_avals as (ShapedArray(float32[3]), ShapedArray(int32[], weak_type=True)),
  // which is no param value: read as ((float32, (3,)), (int32, ())), the form printed back.
  ParamValue parse_result_avals() {
    expect('(');
    ParamValue avals = ParamValue::of_tuple({});
    while (!lex_.peek().is(')')) {
      if (!lex_.peek().is_ident("ShapedArray")) {
        avals.items.push_back(parse_value());
      } else {
        lex_.next();
        expect('(');
        const Token dtype = lex_.next();
        if (dtype.kind != Token::Kind::kIdent) error_at(dtype, "expected a dtype in ShapedArray(..), found " + describe(dtype));
        expect('[');
        std::vector<int64_t> dims;
        while (!lex_.peek().is(']')) {
          const Token dim = lex_.next();
          if (dim.kind != Token::Kind::kNumber) error_at(dim, "expected a dimension, found " + describe(dim));
          dims.push_back(integer_value(dim));
          if (lex_.peek().is(',')) lex_.next();
        }
        lex_.next();
        if (lex_.peek().is(',')) {  // weak_type=True
          lex_.next();
          expect_word("weak_type");
          expect('=');
          parse_value();
        }
        expect(')');
        avals.items.push_back(ParamValue::of_tuple({ParamValue::of_ident(dtype.text), ParamValue::of_ints(dims)}));
      }
      if (lex_.peek().is(',')) lex_.next();
      else if (!lex_.peek().is(')')) error_at(lex_.peek(), "expected ',' or ')', found " + describe(lex_.peek()));
    }
    lex_.next();
    return avals;
  }

  ParamValue parse_value() {
    const Token& t = lex_.peek();
    if (t.is('{')) {
      if (lex_.peek_second().is_ident("lambda")) {
        ParamValue v;
        v.kind = ParamValue::Kind::kProgram;
        v.program = std::make_shared<Program>(parse_jaxpr());
        return v;
      }
      return parse_sequence('{', '}', ParamValue::Kind::kSet);
    }
    if (t.is('(')) return parse_sequence('(', ')', ParamValue::Kind::kTuple);
    if (t.is('[')) return parse_sequence('[', ']', ParamValue::Kind::kList);
    if (t.is('<')) {
      ParamValue v;
      v.kind = ParamValue::Kind::kFunction;
      std::string raw = lex_.read_angle_text();
      // "<function NAME at 0x..>" -> NAME; "<lambda>", "<unnamed function>" keep their text.
      if (raw.rfind("function ", 0) == 0) {
        raw = raw.substr(9);
        if (auto at = raw.find(" at 0x"); at != std::string::npos) raw = raw.substr(0, at);
      }
      v.text = raw;
      return v;
    }
    Token tok = lex_.next();
    ParamValue v;
    switch (tok.kind) {
      case Token::Kind::kNumber:
        if (is_complex_literal(tok.text)) return ParamValue::of_ident(tok.text);  // kept as written
        if (tok.text.find_first_of(".eEn") == std::string::npos) {
          v.kind = ParamValue::Kind::kInt;
          v.integer = integer_value(tok);
        } else {
          v.kind = ParamValue::Kind::kFloat;
          v.number = float_value(tok);
        }
        return v;
      case Token::Kind::kString: return ParamValue::of_string(tok.text);
      case Token::Kind::kIdent: {
        if (tok.text == "None") return ParamValue::none();
        if (tok.text == "True" || tok.text == "False") return ParamValue::of_bool(tok.text == "True");
        std::string name = tok.text;
        // Dotted names: jnp.float32, module.Class.
        while (lex_.peek().is('.') && lex_.peek_second().kind == Token::Kind::kIdent) {
          lex_.next();
          name += "." + lex_.next().text;
        }
        if (lex_.peek().is('(')) {
          ParamValue call = parse_sequence('(', ')', ParamValue::Kind::kCall);
          call.text = name;
          return call;
        }
        return ParamValue::of_ident(name);
      }
      case Token::Kind::kPunct: case Token::Kind::kEnd: break;
    }
    error_at(tok, "expected a parameter value, found " + describe(tok));
  }

  // (a, b), [a, b], {a, b} or NAME(a, k=b): items separated by commas, a trailing comma allowed.
  ParamValue parse_sequence(char open, char close, ParamValue::Kind kind) {
    expect(open);
    ParamValue v;
    v.kind = kind;
    while (!lex_.peek().is(close)) {
      if (kind == ParamValue::Kind::kCall && lex_.peek().kind == Token::Kind::kIdent && lex_.peek_second().is('=')) {
        ParamValue kw;
        kw.kind = ParamValue::Kind::kKeyword;
        kw.text = lex_.next().text;
        lex_.next();
        kw.items.push_back(parse_value());
        v.items.push_back(std::move(kw));
      } else {
        v.items.push_back(parse_value());
      }
      // core.py's pp_kv_pair prints a tuple of jaxprs (cond's branches) one per line, no commas.
      const bool program_follows = v.items.back().kind == ParamValue::Kind::kProgram && lex_.peek().is('{');
      if (lex_.peek().is(',')) lex_.next();
      else if (!lex_.peek().is(close) && !program_follows)
        error_at(lex_.peek(), std::string("expected ',' or '") + close + "', found " + describe(lex_.peek()));
    }
    lex_.next();
    return v;
  }

  // A sub-program param of a control-flow equation (scan's jaxpr, each of cond's branches, while's
  // cond_jaxpr and body_jaxpr): written inline, or a shared sub-program's name.
  void resolve_program_value(const Equation& eqn, const std::string& key, ParamValue& v, std::set<std::string>& active) {
    if (v.kind == ParamValue::Kind::kIdent && shared_.count(v.text)) {
      v = ParamValue::of_program(resolve_shared(eqn.where, v.text, active));
    } else if (v.kind == ParamValue::Kind::kProgram) {
      resolve_references(const_cast<Program&>(*v.program), active, eqn.where);
    } else if (v.is_sequence()) {
      for (ParamValue& item : v.items) resolve_program_value(eqn, key, item, active);
    } else if (v.kind == ParamValue::Kind::kIdent) {
      fail_at(eqn.where, "undefined sub-program '" + v.text + "' in " + key);
    }
  }

  // A shared sub-program with its own references resolved, once however often it is named (a
  // depth-first walk: `active` holds the names being resolved, so a cycle is found the first time).
  std::shared_ptr<Program> resolve_shared(const SourceLocation& where, const std::string& name,
                                          std::set<std::string>& active) {
    const std::shared_ptr<Program>& shared = shared_.at(name);
    if (resolved_.count(name)) return shared;
    if (active.count(name)) fail_at(where, "sub-program '" + name + "' calls itself");
    active.insert(name);
    resolve_references(*shared, active, where);
    active.erase(name);
    resolved_.insert(name);
    return shared;
  }

  // jaxpr=NAME refers to a shared sub-program defined with `let NAME = {...} in`. Names can chain
  // without brackets, so this walk has its own bound.
  void resolve_references(Program& program, std::set<std::string>& active, const SourceLocation& where) {
    const NestingGuard nesting(resolve_depth_, kMaxProgramNesting, "programs", where);
    for (Equation& eqn : program.eqns) {
      if (is_control_flow(eqn.prim)) {
        for (auto& [key, value] : eqn.params.entries)
          if (key == "jaxpr" || key == "branches" || key == "cond_jaxpr" || key == "body_jaxpr")
            resolve_program_value(eqn, key, value, active);
        continue;
      }
      if (!has_body(eqn.prim)) continue;
      ParamValue* body = nullptr;
      const std::string_view key = body_param(eqn.prim);
      for (auto& [k, v] : eqn.params.entries)
        if (k == key) body = &v;
      if (!body) fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " has no " + std::string(key) + " parameter");
      if (body->kind == ParamValue::Kind::kIdent) {
        if (!shared_.count(body->text)) fail_at(eqn.where, "undefined sub-program '" + body->text + "'");
        *body = ParamValue::of_program(resolve_shared(eqn.where, body->text, active));
      } else if (body->kind == ParamValue::Kind::kProgram) {
        resolve_references(const_cast<Program&>(*body->program), active, eqn.where);
      } else {
        fail_at(eqn.where, std::string(prim_name(eqn.prim)) + ": " + std::string(key) + " must be a sub-program, got " +
                               body->str());
      }
    }
  }

  // Equations `eqn` stands for with its calls inlined, as linearize inlines them: a sub-program
  // counted at each call, a control-flow body once (traced once, not per iteration). Saturates
  // past the limit; `memo` counts each sub-program once.
  using InlinedSizes = std::map<const Program*, int64_t>;
  static int64_t inlined_equations(const Equation& eqn, InlinedSizes& memo) {
    int64_t total = 1;
    std::vector<const ParamValue*> values;
    for (const auto& entry : eqn.params.entries) values.push_back(&entry.second);
    while (!values.empty()) {
      const ParamValue* v = values.back();
      values.pop_back();
      if (v->kind == ParamValue::Kind::kProgram) total = saturated(total + inlined_equations(*v->program, memo));
      for (const ParamValue& item : v->items) values.push_back(&item);
    }
    return total;
  }
  static int64_t inlined_equations(const Program& program, InlinedSizes& memo) {
    if (auto it = memo.find(&program); it != memo.end()) return it->second;
    int64_t total = 0;
    for (const Equation& eqn : program.eqns) total = saturated(total + inlined_equations(eqn, memo));
    return memo[&program] = total;
  }
  static int64_t saturated(int64_t n) { return std::min(n, kMaxInlinedEquations + 1); }

  // Shared sub-programs that call each other many times a level multiply: refused at the
  // equation of the main program that goes past the limit.
  static void check_inlined_size(const Program& main) {
    InlinedSizes memo;
    int64_t total = 0;
    for (const Equation& eqn : main.eqns) {
      total += inlined_equations(eqn, memo);
      if (total > kMaxInlinedEquations)
        fail_at(eqn.where, "the program inlines to more than " + std::to_string(kMaxInlinedEquations) +
                               " equations: its shared sub-programs call each other too many times (rematkit's "
                               "limit, docs/program-format.md#limits)");
    }
  }

  Lexer lex_;
  std::vector<std::string>* problems_;
  const ArgTypes* arg_types_;
  std::set<std::string> used_arg_types_;
  // Inference of untyped main binders (uses_determine): types found by earlier probes; whether this
  // reading is a probe; the main program; its untyped binders (by var: name token, where the type
  // came from); the vars of unknown type (a probe's); the types this reading found.
  const ArgTypes* inferred_ = nullptr;
  bool probe_ = false;
  const Program* main_program_ = nullptr;
  std::map<int, std::pair<Token, std::string>> untyped_binders_;
  std::set<int> pending_;
  ArgTypes found_;
  std::map<std::string, std::shared_ptr<Program>> shared_;
  std::map<std::string, SourceLocation> shared_where_;  // where each is named
  std::set<std::string> resolved_;                      // those whose references are resolved
  // Sub-programs open in parse_jaxpr and in resolve_references (each bounded: NestingGuard).
  int jaxpr_depth_ = 0;
  int resolve_depth_ = 0;
};

}  // namespace

// The types of untyped main binders their uses determine, read to a fixed point: each probe reading
// types a pending binder at the first use that determines it, and the next starts from those types,
// so a use before that one sees them. Each round adds a binder or stops. A probe that meets a problem
// stops there; the reading after it reports the problem.
static ArgTypes infer_arg_types(std::string_view text, const std::string& file, const ArgTypes& arg_types) {
  ArgTypes inferred;
  while (true) {
    Parser probe(text, file, nullptr, &arg_types);
    probe.probe(&inferred);
    bool stopped = false;
    try {
      probe.parse_file();
    } catch (const Parser::NothingPending&) {
      return inferred;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kBadInput) throw;
      stopped = true;
    }
    const size_t before = inferred.size();
    for (const auto& [name, type] : probe.found()) inferred.emplace(name, type);
    if (stopped || inferred.size() == before) return inferred;
  }
}

Program parse_program(std::string_view text, const std::string& file, const ArgTypes& arg_types) {
  const ArgTypes inferred = infer_arg_types(text, file, arg_types);
  Parser parser(text, file, nullptr, &arg_types);
  parser.infer_with(&inferred);
  return parser.parse_file();
}

ArgTypes parse_arg_types(std::string_view text, const std::string& source) {
  return Parser(text, source).parse_arg_types();
}

std::vector<std::string> program_problems(std::string_view text, const std::string& file, const ArgTypes& arg_types) {
  std::vector<std::string> problems;
  try {
    const ArgTypes inferred = infer_arg_types(text, file, arg_types);
    Parser parser(text, file, &problems, &arg_types);
    parser.infer_with(&inferred);
    parser.parse_file();
  } catch (const Error& e) {  // one the reading cannot go on after (a missing brace)
    if (e.kind() != ErrorKind::kBadInput) throw;
    problems.push_back(e.what());
  }
  // In file order (reading finds some, verifying the rest), then the same problem (an unsupported
  // dtype, an unknown primitive) once, at its first place, with the lines of the others.
  const std::string prefix = file + ":";
  auto place = [&](const std::string& p) -> std::pair<long, long> {
    if (p.rfind(prefix, 0) != 0) return {LONG_MAX, 0};
    char* end = nullptr;
    const long line = std::strtol(p.c_str() + prefix.size(), &end, 10);
    const long column = *end == ':' ? std::strtol(end + 1, nullptr, 10) : 0;
    return {line, column};
  };
  std::stable_sort(problems.begin(), problems.end(),
                   [&](const std::string& a, const std::string& b) { return place(a) < place(b); });
  auto split = [&](const std::string& p) -> std::pair<std::string, std::string> {  // (line, message)
    if (p.rfind(prefix, 0) != 0) return {"", p};
    const size_t line_end = p.find(':', prefix.size());
    const size_t message = p.find(": ", prefix.size());
    if (line_end == std::string::npos || message == std::string::npos) return {"", p};
    return {p.substr(prefix.size(), line_end - prefix.size()), p.substr(message + 2)};
  };
  std::vector<std::string> unique;
  std::map<std::string, std::pair<size_t, std::vector<std::string>>> seen;  // message -> (index, other lines)
  for (const std::string& p : problems) {
    auto [line, message] = split(p);
    auto [it, fresh] = seen.try_emplace(message, unique.size(), std::vector<std::string>{});
    if (fresh) unique.push_back(p);
    else it->second.second.push_back(line);
  }
  for (const auto& [message, first] : seen) {
    const std::vector<std::string>& others = first.second;
    if (others.empty()) continue;
    std::string lines;
    for (size_t i = 0; i < others.size() && i < 8; ++i) lines += (i ? ", " : "") + others[i];
    if (others.size() > 8) lines += ", ...";
    unique[first.first] += " (also on line" + std::string(others.size() > 1 ? "s " : " ") + lines + ")";
  }
  return unique;
}

ParamValue parse_param_value(std::string_view text, const std::string& source) {
  Parser parser(text, source);
  return parser.parse_lone_value();
}

}  // namespace rematkit
