// Reading a program from a file the user named.
#pragma once

#include <string>

#include "rematkit/io/export.hpp"
#include "rematkit/program.hpp"

namespace rematkit {

// Reads and parses a file; a missing, unreadable or empty file is a bad-input error naming it.
REMATKIT_IO_EXPORT Program load_program(const std::string& path);

}  // namespace rematkit
