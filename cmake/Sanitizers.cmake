# rematkit_sanitizers: an INTERFACE target that adds -fsanitize=... when REMATKIT_SANITIZE is set.
add_library(rematkit_sanitizers INTERFACE)
if(REMATKIT_SANITIZE)
  list(JOIN REMATKIT_SANITIZE "," _rk_sanitizers)
  target_compile_options(rematkit_sanitizers INTERFACE
    -fsanitize=${_rk_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(rematkit_sanitizers INTERFACE -fsanitize=${_rk_sanitizers})
endif()
