// Tokens of the jaxpr syntax with their line and column. Internal to the parser.
#pragma once
#include <string>
#include <string_view>

#include "rematkit/ir/error.hpp"

namespace rematkit::detail {

struct Token {
  enum class Kind { kIdent, kNumber, kString, kPunct, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;  // identifier, number spelling, string contents, or the punctuation character
  int line = 1;
  int column = 1;

  bool is(char punct) const { return kind == Kind::kPunct && text.size() == 1 && text[0] == punct; }
  bool is_ident(std::string_view word) const { return kind == Kind::kIdent && text == word; }
  bool is_op(std::string_view op) const { return kind == Kind::kPunct && text == op; }  // `<-`, `+=`
};

// The length of a parenthesized complex number as Python prints one, (1+2j) or (-0-1.5e-05j), at
// `pos` of `text`; 0 if there is none there.
size_t complex_literal_length(std::string_view text, size_t pos);

class Lexer {
 public:
  Lexer(std::string_view text, std::string file);

  const Token& peek();        // the next token, not consumed
  const Token& peek_second();  // the token after it
  Token next();
  // Reads a balanced `<...>` (a JAX function repr) starting at the next token, which must be '<'.
  // Returns the text between the outer brackets.
  std::string read_angle_text();
  // Skips the raw text of a param value the parser cannot read: up to the next ' ' or ']' outside
  // brackets, (, [, { and < balanced. Starts at the next token, which must not be buffered past.
  void skip_raw_value();
  // The same text, read: runs of spaces and line breaks become one space.
  std::string read_raw_value();
  // Reads the raw text up to the next `marker` that follows a space or a line break (the next
  // param), trimmed: a param JAX prints as a bare string, such as
  // debug_print's fmt=. Starts at the next token, which must not be buffered past.
  std::string read_raw_until(std::string_view marker);
  // Whether the next token is a quoted string, looking past spaces only. Unbuffered, like the above.
  bool string_follows() const;
  SourceLocation where(const Token& token) const { return {file_, token.line, token.column}; }
  // How many brackets ((, [, {) the tokens consumed so far leave open.
  int depth() const { return depth_; }
  const std::string& file() const { return file_; }

 private:
  Token scan();
  void skip_space_and_comments();

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  Token lookahead_[2];
  int buffered_ = 0;
  int depth_ = 0;
};

}  // namespace rematkit::detail
