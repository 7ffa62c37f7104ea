# Third-party packages, all from Debian 12 (scripts/install-deps.sh installs them). The core needs
# oneTBB alone; every other part is built as its REMATKIT_* option (Options.cmake) says.
find_package(TBB 2021 CONFIG REQUIRED)  # TBB::tbb: the core's threads

# rematkit_decide(PART FOUND WHAT): sets PART_ENABLED from the part's option and whether what it
# needs (WHAT, for messages) was found.
function(rematkit_decide part found what)
  string(TOUPPER "${${part}}" value)
  if(value STREQUAL "AUTO")
    if(found)
      set(enabled TRUE)
    else()
      set(enabled FALSE)
      message(STATUS "rematkit: not building ${part}: ${what} not found")
    endif()
  elseif(${part})
    if(NOT found)
      message(FATAL_ERROR "rematkit: ${part}=${${part}} needs ${what}, which was not found")
    endif()
    set(enabled TRUE)
  else()
    set(enabled FALSE)
  endif()
  set(${part}_ENABLED ${enabled} PARENT_SCOPE)
endfunction()

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(NETTLE QUIET IMPORTED_TARGET nettle)  # SHA-1 for Flax's RNG path hashing
endif()
rematkit_decide(REMATKIT_FLAX "${NETTLE_FOUND}" "nettle (nettle-dev)")

find_package(nlohmann_json 3.11 CONFIG QUIET)  # inputs and results as JSON
rematkit_decide(REMATKIT_IO "${nlohmann_json_FOUND}" "nlohmann-json 3.11 (nlohmann-json3-dev)")

find_package(CLI11 2.1 CONFIG QUIET)        # the command line
find_package(yaml-cpp 0.7 CONFIG QUIET)     # sweep files; Debian's 0.7 exports `yaml-cpp` unnamespaced
if(yaml-cpp_FOUND AND NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()
if(CLI11_FOUND AND yaml-cpp_FOUND AND REMATKIT_FLAX_ENABLED AND REMATKIT_IO_ENABLED)
  set(_rk_tools_found TRUE)
else()
  set(_rk_tools_found FALSE)
endif()
rematkit_decide(REMATKIT_TOOLS "${_rk_tools_found}" "CLI11 2.1, yaml-cpp 0.7, rematkit::flax and rematkit::io")

if(PkgConfig_FOUND)
  pkg_check_modules(CBC QUIET IMPORTED_TARGET cbc)  # the budget solver's integer programs
endif()
rematkit_decide(REMATKIT_SOLVER_CBC "${CBC_FOUND}" "COIN-OR CBC (coinor-libcbc-dev)")

if(REMATKIT_MPI)  # ON or AUTO (not a false constant): look for it
  find_package(MPI COMPONENTS C QUIET)  # MPI::MPI_C: a sweep's groups over the ranks
  find_program(REMATKIT_MPIEXEC NAMES mpirun mpiexec)  # for the test that runs one
endif()
if(MPI_C_FOUND AND REMATKIT_MPIEXEC)
  set(_rk_mpi_found TRUE)
else()
  set(_rk_mpi_found FALSE)
endif()
rematkit_decide(REMATKIT_MPI "${_rk_mpi_found}" "MPI and mpirun (libopenmpi-dev, openmpi-bin)")

find_package(hwy 1.0 CONFIG QUIET)  # hwy::hwy: the Highway backend's SIMD kernels
rematkit_decide(REMATKIT_BACKEND_HIGHWAY "${hwy_FOUND}" "Highway 1.0 (libhwy-dev)")

string(TOUPPER "${REMATKIT_BACKEND_ONEDNN}" _rk_onednn)
if(NOT _rk_onednn STREQUAL "OFF" AND NOT _rk_onednn STREQUAL "FALSE" AND NOT _rk_onednn STREQUAL "0")
  find_package(dnnl 2.6 CONFIG QUIET)  # DNNL::dnnl (needs OpenCL's dev files)
  find_package(OpenMP QUIET)           # OpenMP::OpenMP_CXX: oneDNN's thread count
endif()
if(dnnl_FOUND AND OpenMP_CXX_FOUND)
  set(_rk_onednn_found TRUE)
else()
  set(_rk_onednn_found FALSE)
endif()
rematkit_decide(REMATKIT_BACKEND_ONEDNN "${_rk_onednn_found}" "oneDNN 2.6 and OpenMP (libdnnl-dev)")

# libFuzzer comes with clang's runtime: a compiler that links -fsanitize=fuzzer has it.
set(_rk_fuzz_found FALSE)
string(TOUPPER "${REMATKIT_FUZZ}" _rk_fuzz)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND REMATKIT_TOOLS_ENABLED AND NOT _rk_fuzz MATCHES "^(OFF|FALSE|0)$")
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  check_cxx_source_compiles("#include <cstddef>
#include <cstdint>
extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }" REMATKIT_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  set(_rk_fuzz_found ${REMATKIT_HAVE_LIBFUZZER})
endif()
rematkit_decide(REMATKIT_FUZZ "${_rk_fuzz_found}" "clang with libFuzzer (clang-14, libclang-rt-14-dev), and the tools")

# OpenBLAS by its own pkg-config file (the blas backend calls OpenBLAS's openblas_* functions too, so
# any other BLAS would not do), and its cblas.h.
if(PkgConfig_FOUND)
  pkg_check_modules(OPENBLAS QUIET IMPORTED_TARGET openblas)  # PkgConfig::OPENBLAS: cblas_sgemm
endif()
set(_rk_blas_found FALSE)
foreach(dir IN LISTS OPENBLAS_INCLUDE_DIRS)
  if(OPENBLAS_FOUND AND EXISTS "${dir}/cblas.h")
    set(_rk_blas_found TRUE)
  endif()
endforeach()
rematkit_decide(REMATKIT_BACKEND_BLAS "${_rk_blas_found}" "OpenBLAS with cblas.h (libopenblas-dev)")

# libxsmm 1.17 by its pkg-config files (libxsmm and libxsmmnoblas, whose stand-in BLAS symbols
# libxsmm's fallback paths name, so that no BLAS is needed). Debian ships static PIC archives only:
# the xsmm plugin links them in, in that order, and its version script keeps their symbols hidden.
if(PkgConfig_FOUND)
  pkg_check_modules(XSMM QUIET libxsmm)
  pkg_check_modules(XSMMNOBLAS QUIET libxsmmnoblas)
endif()
set(_rk_xsmm_found FALSE)
if(XSMM_FOUND AND XSMMNOBLAS_FOUND)
  find_library(REMATKIT_XSMM_ARCHIVE NAMES libxsmm.a xsmm HINTS ${XSMM_LIBRARY_DIRS})
  find_library(REMATKIT_XSMMNOBLAS_ARCHIVE NAMES libxsmmnoblas.a xsmmnoblas HINTS ${XSMMNOBLAS_LIBRARY_DIRS})
  find_path(REMATKIT_XSMM_INCLUDE_DIR libxsmm.h HINTS ${XSMM_INCLUDE_DIRS})
  if(REMATKIT_XSMM_ARCHIVE AND REMATKIT_XSMMNOBLAS_ARCHIVE AND REMATKIT_XSMM_INCLUDE_DIR)
    set(_rk_xsmm_found TRUE)
  endif()
endif()
rematkit_decide(REMATKIT_BACKEND_XSMM "${_rk_xsmm_found}" "libxsmm with libxsmmnoblas (libxsmm-dev)")
if(REMATKIT_BACKEND_XSMM_ENABLED AND NOT TARGET rematkit_xsmm)
  find_package(Threads REQUIRED)
  add_library(rematkit_xsmm INTERFACE)  # libxsmm, then its stand-in BLAS, then what both call
  target_include_directories(rematkit_xsmm SYSTEM INTERFACE "${REMATKIT_XSMM_INCLUDE_DIR}")
  target_link_libraries(rematkit_xsmm INTERFACE "${REMATKIT_XSMM_ARCHIVE}" "${REMATKIT_XSMMNOBLAS_ARCHIVE}"
    Threads::Threads rt dl m)
endif()

# The Python package (python/) needs the tools' libraries, pybind11 and Python's headers; it is built
# for Debian's python3 (the interpreter apt's numpy, pytest and pybind11 serve) unless
# Python3_EXECUTABLE names another. A plain interpreter loads it from an AddressSanitizer build only
# with clang's shared ASan runtime preloaded (REMATKIT_ASAN_RUNTIME, which the tests preload); other
# sanitizer builds (the fuzz preset's) leave it out.
set(REMATKIT_ASAN_RUNTIME "")
if("address" IN_LIST REMATKIT_SANITIZE AND NOT "fuzzer-no-link" IN_LIST REMATKIT_SANITIZE
   AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so
                  OUTPUT_VARIABLE _rk_asan_so OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(IS_ABSOLUTE "${_rk_asan_so}" AND EXISTS "${_rk_asan_so}")
    set(REMATKIT_ASAN_RUNTIME "${_rk_asan_so}")
  endif()
endif()
set(_rk_python_found FALSE)
string(TOUPPER "${REMATKIT_PYTHON}" _rk_python)
if(REMATKIT_TOOLS_ENABLED AND (NOT REMATKIT_SANITIZE OR REMATKIT_ASAN_RUNTIME) AND NOT _rk_python MATCHES "^(OFF|FALSE|0)$")
  if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "the Python the rematkit package is built for")
  endif()
  find_package(Python3 3.9 COMPONENTS Interpreter Development.Module QUIET)
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 2.6 CONFIG QUIET)
  if(Python3_FOUND AND pybind11_FOUND)
    set(_rk_python_found TRUE)
  endif()
endif()
rematkit_decide(REMATKIT_PYTHON "${_rk_python_found}" "pybind11 and Python 3 headers (pybind11-dev, python3-dev), the tools, and no sanitizer but clang's AddressSanitizer")

if(REMATKIT_BUILD_BENCH)
  find_package(benchmark 1.7 CONFIG REQUIRED)  # benchmark::benchmark_main
endif()
if(REMATKIT_BUILD_TESTS)
  find_package(GTest 1.12 CONFIG REQUIRED)  # GTest::gtest_main
  foreach(part REMATKIT_FLAX REMATKIT_IO REMATKIT_TOOLS REMATKIT_BACKEND_HIGHWAY)
    if(NOT ${part}_ENABLED)
      message(FATAL_ERROR "rematkit: the tests need ${part}; install what it needs (scripts/install-deps.sh) or "
                          "configure with -DREMATKIT_BUILD_TESTS=OFF")
    endif()
  endforeach()
endif()
