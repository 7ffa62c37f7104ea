# Every REMATKIT_* knob in one place.
option(REMATKIT_BUILD_TESTS "Build the GoogleTest suite" ${PROJECT_IS_TOP_LEVEL})
option(REMATKIT_BUILD_BENCH "Build the Google Benchmark binaries" ${PROJECT_IS_TOP_LEVEL})
# LeakSanitizer's tracer crashes at exit while scanning the TLS of libgomp's threads in a dlopen'ed
# oneDNN (every test passes first), so the sanitizer build leaves this backend out.
option(REMATKIT_BACKEND_ONEDNN "Build the oneDNN backend plugin" ON)
option(REMATKIT_WERROR "Treat warnings in rematkit's own code as errors" ON)
set(REMATKIT_SANITIZE "" CACHE STRING "Sanitizers for rematkit's own code, e.g. address;undefined")
