#include "python_repr.hpp"

#include "lexer.hpp"
#include "rematkit/ir/nesting_limit.hpp"

namespace rematkit::detail {
namespace {

class ReprReader {
 public:
  ReprReader(std::string_view text, const std::string& param, const SourceLocation& where)
      : lex_(text, where.file), param_(param), where_(where) {}

  Repr read_whole() {
    Repr r = read();
    if (lex_.peek().kind != Token::Kind::kEnd) fail("unexpected " + lex_.peek().text);
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    fail_at(where_, param_ + "= is not a repr rematkit reads (" + what + ")");
  }

  Repr read() {
    const NestingGuard nesting(depth_, kMaxBracketNesting, "brackets (in a parameter's repr)", where_);
    Token t = lex_.next();
    Repr r;
    switch (t.kind) {
      case Token::Kind::kNumber: r.kind = Repr::Kind::kNumber; r.text = t.text; return r;
      case Token::Kind::kString: r.kind = Repr::Kind::kString; r.text = t.text; return r;
      case Token::Kind::kIdent:
        r.text = t.text;
        while (lex_.peek().is('.') && lex_.peek_second().kind == Token::Kind::kIdent) {
          lex_.next();
          r.text += "." + lex_.next().text;
        }
        if (!lex_.peek().is('(')) return r;
        lex_.next();
        r.kind = Repr::Kind::kCall;
        read_items(r, ')');
        return r;
      case Token::Kind::kPunct:
        if (t.is('(') || t.is('[')) {
          r.kind = Repr::Kind::kSequence;
          read_items(r, t.is('(') ? ')' : ']');
          return r;
        }
        if (t.is('{')) {
          r.kind = Repr::Kind::kDict;  // a set's items have no keys
          read_items(r, '}');
          return r;
        }
        if (t.is('<')) {  // <jax._src.partition_spec._UnconstrainedPartitionSingleton object at 0x..>
          r.text = "<";
          for (int open = 1; open > 0;) {
            Token in = lex_.next();
            if (in.kind == Token::Kind::kEnd) fail("an unclosed '<'");
            if (in.is('<')) ++open;
            if (in.is('>')) --open;
            r.text += in.text;
          }
          return r;
        }
        break;
      case Token::Kind::kEnd: break;
    }
    fail(t.kind == Token::Kind::kEnd ? "it ends early" : "unexpected " + t.text);
  }

  // Items up to `close`: `v`, `k=v` in a call, `k: v` anywhere; a trailing comma allowed.
  void read_items(Repr& r, char close) {
    while (!lex_.peek().is(close)) {
      std::string key;
      if (r.kind == Repr::Kind::kCall && lex_.peek().kind == Token::Kind::kIdent && lex_.peek_second().is('=')) {
        key = lex_.next().text + "=";  // a keyword: its '=' keeps it apart from a 'name': value pair
        lex_.next();
      }
      Repr item = read();
      if (key.empty() && lex_.peek().is(':')) {  // 'x': 4, 0: ('x',)
        lex_.next();
        key = item.text;
        item = read();
      }
      r.items.push_back(std::move(item));
      r.keys.push_back(std::move(key));
      if (lex_.peek().is(',')) lex_.next();
      else if (!lex_.peek().is(close)) fail(std::string("expected ',' or '") + close + "', found " + lex_.peek().text);
    }
    lex_.next();
  }

  Lexer lex_;
  const std::string& param_;
  const SourceLocation& where_;
  int depth_ = 0;
};

}  // namespace

const Repr* Repr::find(std::string_view key) const {
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &items[i];
  return nullptr;
}

Repr read_repr(std::string_view text, const std::string& param, const SourceLocation& where) {
  return ReprReader(text, param, where).read_whole();
}

}  // namespace rematkit::detail
