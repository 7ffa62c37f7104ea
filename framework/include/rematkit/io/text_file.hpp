// Reading a whole file the user named, and writing one atomically, each with a one-line error that
// says which file and what it is for.
#pragma once

#include <string>

#include "rematkit/io/export.hpp"

namespace rematkit {

// The file's bytes; a bad-input Error "PATH: cannot open the WHAT" (or "cannot read") otherwise.
// `what` names the file's role: "program file", "inputs file", "sweep file", ...
REMATKIT_IO_EXPORT std::string read_text_file(const std::string& path, const std::string& what);

// Writes `text` to a temporary file beside `path`, then renames it over `path`: a reader sees the
// old file or the whole new one, never a part. A bad-input Error "PATH: cannot write the WHAT"
// otherwise, and nothing is left behind.
REMATKIT_IO_EXPORT void write_text_file(const std::string& path, const std::string& text, const std::string& what);

// Why write_text_file(path) would fail before anything is computed for it ("PATH: cannot write
// the WHAT: FOLDER does not exist"), or "" when its folder exists and is writable.
REMATKIT_IO_EXPORT std::string unwritable_file_reason(const std::string& path, const std::string& what);

// The same for a folder of outputs: "" when it is a writable folder, or could be made in one.
REMATKIT_IO_EXPORT std::string unwritable_folder_reason(const std::string& folder, const std::string& what);

}  // namespace rematkit
