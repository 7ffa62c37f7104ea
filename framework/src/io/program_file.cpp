#include "rematkit/io/program_file.hpp"

#include <iostream>
#include <iterator>

#include "rematkit/ir/error.hpp"
#include "rematkit/io/text_file.hpp"
#include "rematkit/ir/parser.hpp"

namespace rematkit {

std::string program_source_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

std::string read_program_text(const std::string& path) {
  if (path != "-") return read_text_file(path, "program file");
  std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (std::cin.bad()) fail("could not read the program from standard input");
  return text;
}

Program load_program(const std::string& path) { return parse_program(read_program_text(path), program_source_name(path)); }

}  // namespace rematkit
