// Reading a program from a file the user named.
#pragma once

#include <string>

#include "rematkit/io/export.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

// Reads and parses a file ("-": standard input); a missing, unreadable or empty file is a
// bad-input error naming it.
REMATKIT_IO_EXPORT Program load_program(const std::string& path);

// The text of a program file, or of standard input for "-".
REMATKIT_IO_EXPORT std::string read_program_text(const std::string& path);
// What messages call the program at `path`: the path, or "<stdin>" for "-".
REMATKIT_IO_EXPORT std::string program_source_name(const std::string& path);

}  // namespace rematkit
