// rematkit's C++ errors as the package's Python exceptions (rematkit/_errors.py): a bad input is a
// ProgramError with its file, line and column; a memory limit a MemoryLimitError with its bytes.
#pragma once

namespace rematkit::python {

// Registers the translator; call once from the module's init.
void register_error_translator();

}  // namespace rematkit::python
