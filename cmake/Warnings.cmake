# rematkit_warnings: an INTERFACE target carrying our warning flags. Only our own targets link it,
# so third-party headers are not held to -Werror.
add_library(rematkit_warnings INTERFACE)
target_compile_options(rematkit_warnings INTERFACE -Wall -Wextra -Wpedantic
  $<$<BOOL:${REMATKIT_WERROR}>:-Werror>
  # A switch over Prim has no default: a primitive added to the table without its rules must not compile.
  -Werror=switch -Werror=switch-enum
  # GCC 12 reports std::string concatenation at -O3 as overlapping memcpy (GCC bug 105329).
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
