// Reading a whole file the user named, with a one-line error that says which file and what it is for.
#pragma once
#include <string>

namespace rematkit {

// The file's bytes; a bad-input Error "PATH: cannot open the WHAT" (or "cannot read") otherwise.
// `what` names the file's role: "program file", "inputs file", "sweep file", ...
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace rematkit
