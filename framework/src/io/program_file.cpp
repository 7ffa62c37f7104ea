#include "rematkit/io/program_file.hpp"

#include "rematkit/io/text_file.hpp"
#include "rematkit/parser.hpp"

namespace rematkit {

Program load_program(const std::string& path) { return parse_program(read_text_file(path, "program file"), path); }

}  // namespace rematkit
