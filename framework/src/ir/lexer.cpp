#include "lexer.hpp"

#include <cctype>

#include "rematkit/ir/nesting_limit.hpp"

namespace rematkit::detail {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The length of a real number as Python prints one (12, -0.5, 1e-05, inf, nan) at `pos`; 0 if none.
size_t real_number_length(std::string_view text, size_t pos) {
  const size_t start = pos;
  auto digit = [&](size_t i) { return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); };
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) ++pos;
  if (text.substr(pos, 3) == "inf" || text.substr(pos, 3) == "nan") return pos + 3 - start;
  if (!digit(pos)) return 0;
  while (digit(pos)) ++pos;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (digit(pos)) ++pos;
  }
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    size_t p = pos + 1;
    if (p < text.size() && (text[p] == '+' || text[p] == '-')) ++p;
    if (digit(p)) {
      pos = p;
      while (digit(pos)) ++pos;
    }
  }
  return pos - start;
}

}  // namespace

size_t complex_literal_length(std::string_view text, size_t pos) {
  if (pos >= text.size() || text[pos] != '(') return 0;
  size_t p = pos + 1;
  const size_t real = real_number_length(text, p);
  if (real == 0) return 0;
  p += real;
  if (p >= text.size() || (text[p] != '+' && text[p] != '-')) return 0;
  const size_t imag = real_number_length(text, p);
  if (imag == 0) return 0;
  p += imag;
  if (text.substr(p, 2) != "j)") return 0;
  return p + 2 - pos;
}

Lexer::Lexer(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\x1b') {
      int line = 1;
      for (size_t j = 0; j < i; ++j) line += text_[j] == '\n';
      fail_at({file_, line, 0}, "the program contains ANSI colour codes; print the jaxpr without colour "
                                "(e.g. pipe it through `sed 's/\\x1b\\[[0-9;]*m//g'`)");
    }
  }
}

void Lexer::skip_space_and_comments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_, ++column_;
    } else if (c == '\n') {
      ++pos_, ++line_, column_ = 1;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++pos_, ++column_;
    } else {
      break;
    }
  }
}

Token Lexer::scan() {
  skip_space_and_comments();
  Token t;
  t.line = line_;
  t.column = column_;
  if (pos_ >= text_.size()) return t;
  const size_t start = pos_;
  auto advance = [&](size_t n) { pos_ += n, column_ += static_cast<int>(n); };
  char c = text_[pos_];
  auto digit_at = [&](size_t i) { return i < text_.size() && std::isdigit(static_cast<unsigned char>(text_[i])); };
  if (ident_start(c)) {
    // A '-' between letters continues the name: JAX's scatter-add, scatter-mul.
    while (pos_ < text_.size() &&
           (ident_char(text_[pos_]) || (text_[pos_] == '-' && pos_ + 1 < text_.size() && ident_start(text_[pos_ + 1]))))
      advance(1);
    t.kind = Token::Kind::kIdent;
    t.text = std::string(text_.substr(start, pos_ - start));
    return t;
  }
  if (const size_t n = complex_literal_length(text_, pos_)) {  // (1+2j), as Python prints a complex
    advance(n);
    t.kind = Token::Kind::kNumber;
    t.text = std::string(text_.substr(start, n));
    return t;
  }
  if (digit_at(pos_) || (c == '-' && (digit_at(pos_ + 1) || text_.substr(pos_ + 1, 3) == "inf"))) {
    if (c == '-') advance(1);
    if (text_.substr(pos_, 3) == "inf") {
      advance(3);
    } else {
      while (digit_at(pos_)) advance(1);
      if (pos_ < text_.size() && text_[pos_] == '.' && digit_at(pos_ + 1)) {
        advance(1);
        while (digit_at(pos_)) advance(1);
      } else if (pos_ < text_.size() && text_[pos_] == '.' &&
                 (pos_ + 1 >= text_.size() || !ident_start(text_[pos_ + 1]))) {
        // "2." as Python prints a float; but "4]. let" never reaches here (']' ends the number).
        advance(1);
      }
      if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
        size_t p = pos_ + 1;
        if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
        if (digit_at(p)) {
          advance(p - pos_);
          while (digit_at(pos_)) advance(1);
        }
      }
    }
    // 2j, -1.5j, infj: an imaginary number (Python's complex repr with a zero real part).
    if (pos_ < text_.size() && text_[pos_] == 'j' && (pos_ + 1 >= text_.size() || !ident_char(text_[pos_ + 1])))
      advance(1);
    t.kind = Token::Kind::kNumber;
    t.text = std::string(text_.substr(start, pos_ - start));
    return t;
  }
  if (c == '\'' || c == '"') {
    advance(1);
    std::string contents;
    while (pos_ < text_.size() && text_[pos_] != c) {
      if (text_[pos_] == '\n') fail_at(where(t), "unterminated string");
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) advance(1);
      contents += text_[pos_];
      advance(1);
    }
    if (pos_ >= text_.size()) fail_at(where(t), "unterminated string");
    advance(1);
    t.kind = Token::Kind::kString;
    t.text = std::move(contents);
    return t;
  }
  // `<-` and `+=`: a ref's store and its accumulation (jax/_src/state/primitives.py's pp rules).
  if (text_.substr(pos_, 2) == "<-" || text_.substr(pos_, 2) == "+=") {
    advance(2);
    t.kind = Token::Kind::kPunct;
    t.text = std::string(text_.substr(start, 2));
    return t;
  }
  static constexpr std::string_view kPunct = "{}()[],;:.=<>*@";  // @: a dim's mesh axes, f32[8@x]
  if (kPunct.find(c) != std::string_view::npos) {
    advance(1);
    t.kind = Token::Kind::kPunct;
    t.text = std::string(1, c);
    return t;
  }
  fail_at(where(t), std::string("unexpected character '") + c + "'");
}

const Token& Lexer::peek() {
  if (buffered_ == 0) lookahead_[buffered_++] = scan();
  return lookahead_[0];
}

const Token& Lexer::peek_second() {
  peek();
  if (buffered_ == 1) lookahead_[buffered_++] = scan();
  return lookahead_[1];
}

Token Lexer::next() {
  peek();
  Token t = std::move(lookahead_[0]);
  if (buffered_ == 2) lookahead_[0] = std::move(lookahead_[1]);
  --buffered_;
  if (t.is('(') || t.is('[') || t.is('{')) {
    // The parser recurses once per open bracket: bounded here, before the stack is.
    if (depth_ == kMaxBracketNesting) fail_too_deep(where(t), "brackets", kMaxBracketNesting);
    ++depth_;
  }
  if (t.is(')') || t.is(']') || t.is('}')) --depth_;
  return t;
}

std::string Lexer::read_angle_text() {
  // Raw text: rewind to the '<' token and scan characters, since a repr is not made of our tokens.
  if (buffered_ != 1 || !lookahead_[0].is('<')) internal_error("read_angle_text without a lone '<' token");
  const Token open = next();
  int depth = 1;
  std::string text;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    ++pos_;
    if (c == '\n') ++line_, column_ = 1;
    else ++column_;
    if (c == '<') ++depth;
    if (c == '>' && --depth == 0) return text;
    text += c;
  }
  fail_at(where(open), "unterminated '<...>'");
}

bool Lexer::string_follows() const {
  const size_t at = text_.find_first_not_of(" \t\r\n", pos_);
  return at != std::string_view::npos && (text_[at] == '\'' || text_[at] == '"');
}

std::string Lexer::read_raw_until(std::string_view marker) {
  if (buffered_ != 0) internal_error("read_raw_until with buffered tokens");
  skip_space_and_comments();
  const SourceLocation start{file_, line_, column_};
  size_t end = pos_;
  while (true) {
    end = text_.find(marker, end);
    if (end == std::string_view::npos) fail_at(start, "no " + std::string(marker) + " after this bare string");
    if (end > pos_ && (text_[end - 1] == ' ' || text_[end - 1] == '\n')) break;
    ++end;
  }
  std::string text(text_.substr(pos_, end - pos_));
  for (; pos_ < end; ++pos_) {
    if (text_[pos_] == '\n') ++line_, column_ = 1;
    else ++column_;
  }
  text.erase(text.find_last_not_of(" \n") + 1);
  return text;
}

std::string Lexer::read_raw_value() {
  if (buffered_ != 0) internal_error("read_raw_value with buffered tokens");
  skip_space_and_comments();
  const SourceLocation start{file_, line_, column_};
  std::string raw;
  std::string open;  // the closers awaited, innermost last
  char quote = 0;
  auto advance = [&](char c) {
    ++pos_;
    if (c == '\n') ++line_, column_ = 1;
    else ++column_;
    // Runs of spaces and line breaks (a numpy array's repr spans lines) are kept as one space.
    if (c == ' ' || c == '\n') {
      if (!raw.empty() && raw.back() != ' ') raw += ' ';
    } else {
      raw += c;
    }
  };
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (quote) {
      if (c == '\n') fail_at(start, "unterminated string in a parameter value");
      if (c == quote) quote = 0;
      advance(c);
      continue;
    }
    if (open.empty() && (c == ' ' || c == '\n' || c == ']')) return raw;
    if (c == '\'' || c == '"') quote = c;
    // '<' opens a repr (<function f at 0x..>) only before a letter: HloSharding's iota tiles
    // ({devices=[2,4]<=[8]}) have a bare '<='.
    if (c == '<' && pos_ + 1 < text_.size() && std::isalpha(static_cast<unsigned char>(text_[pos_ + 1]))) open += '>';
    else if (c == '(') open += ')';
    else if (c == '[') open += ']';
    else if (c == '{') open += '}';
    // A closer that closes nothing open is kept as text: printed reprs are not always balanced.
    else if (!open.empty() && c == open.back()) open.pop_back();
    advance(c);
  }
  fail_at(start, "unterminated parameter value");
}

void Lexer::skip_raw_value() { (void)read_raw_value(); }

}  // namespace rematkit::detail
