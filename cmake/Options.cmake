# Every REMATKIT_* knob in one place.
option(REMATKIT_BUILD_TESTS "Build the GoogleTest suite" ${PROJECT_IS_TOP_LEVEL})
option(REMATKIT_BUILD_BENCH "Build the Google Benchmark binaries" ${PROJECT_IS_TOP_LEVEL})
option(REMATKIT_WERROR "Treat warnings in rematkit's own code as errors" ON)
set(REMATKIT_SANITIZE "" CACHE STRING "Sanitizers for rematkit's own code, e.g. address;undefined")

# Parts beyond the core (which needs only oneTBB): each is ON (built; a missing dependency stops the
# configure), OFF (never built) or AUTO (built when its dependencies are found, the default).
# Dependencies.cmake decides, setting <PART>_ENABLED.
function(rematkit_part name description)
  set(${name} AUTO CACHE STRING "${description}: ON, OFF or AUTO (built when its dependencies are found)")
  set_property(CACHE ${name} PROPERTY STRINGS ON OFF AUTO)
endfunction()
rematkit_part(REMATKIT_FLAX "rematkit::flax: jax.random, Flax's init and ModelBuilder (nettle)")
rematkit_part(REMATKIT_IO "rematkit::io: programs, inputs and outputs as files (nlohmann-json)")
rematkit_part(REMATKIT_TOOLS "the rematkit program and its sweeps (CLI11, yaml-cpp, nlohmann-json; needs flax and io)")
rematkit_part(REMATKIT_BACKEND_HIGHWAY "the Highway SIMD backend plugin (Highway 1.0)")
# LeakSanitizer's tracer crashes at exit while scanning the TLS of libgomp's threads in a dlopen'ed
# oneDNN (every test passes first), so the sanitizer build turns this backend OFF.
rematkit_part(REMATKIT_BACKEND_ONEDNN "the oneDNN backend plugin (oneDNN 2.6 with OpenMP)")
rematkit_part(REMATKIT_BACKEND_BLAS "the OpenBLAS backend plugin: f32 dot_general through cblas_sgemm (libopenblas-dev)")
rematkit_part(REMATKIT_BACKEND_XSMM "the libxsmm backend plugin: small f32 dot_general through libxsmm's JIT kernels (libxsmm-dev)")
rematkit_part(REMATKIT_MPI "rematkit::mpi and, under mpirun, a sweep spread over the ranks and grad of a program on a mesh a rank per device (Open MPI: openmpi-bin, libopenmpi-dev)")
rematkit_part(REMATKIT_FUZZ "the libFuzzer targets in fuzz/ (clang with -fsanitize=fuzzer: clang-14, libclang-rt-14-dev)")
rematkit_part(REMATKIT_PYTHON "the Python package rematkit (pybind11-dev, python3-dev; its tests: python3-numpy, python3-pytest)")
rematkit_part(REMATKIT_SOLVER_CBC "the budget solver's exact method, an integer program solved by COIN-OR CBC (coinor-libcbc-dev)")
