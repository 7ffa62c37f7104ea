# Third-party packages, all from Debian 12 (scripts/install-deps.sh installs them).
find_package(nlohmann_json 3.11 CONFIG REQUIRED)   # nlohmann_json::nlohmann_json (inputs files)
find_package(CLI11 2.1 CONFIG REQUIRED)            # CLI11::CLI11 (the rematkit command line)
find_package(PkgConfig REQUIRED)
pkg_check_modules(NETTLE REQUIRED IMPORTED_TARGET nettle)  # SHA-1 for Flax's RNG path hashing
find_package(hwy 1.0 CONFIG REQUIRED)              # hwy::hwy (the Highway backend's SIMD kernels)
find_package(TBB 2021 CONFIG REQUIRED)             # TBB::tbb (parallel kernels)
find_package(yaml-cpp 0.7 CONFIG REQUIRED)         # sweep files; Debian's 0.7 exports `yaml-cpp` unnamespaced
if(NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()
if(REMATKIT_BACKEND_ONEDNN)
  find_package(dnnl 2.6 CONFIG REQUIRED)           # DNNL::dnnl (the oneDNN backend; needs OpenCL's dev files)
  find_package(OpenMP REQUIRED)                    # OpenMP::OpenMP_CXX (oneDNN's thread count)
endif()
if(REMATKIT_BUILD_BENCH)
  find_package(benchmark 1.7 CONFIG REQUIRED)      # benchmark::benchmark_main
endif()
if(REMATKIT_BUILD_TESTS)
  find_package(GTest 1.12 CONFIG REQUIRED)         # GTest::gtest_main
endif()
