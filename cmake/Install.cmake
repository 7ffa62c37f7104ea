# `cmake --install build --prefix P` puts into P: the headers (include/rematkit), the libraries
# (rematkit::core, and rematkit::flax, rematkit::io, rematkit::sweep and rematkit::mpi where built) and the rematkit program, the
# built-in plugins (lib/rematkit/plugins, found beside the core library at run time), a CMake
# package (find_package(rematkit): the rematkit:: targets, rematkit_add_plugin()) and a pkg-config
# file per library. Every path is relative to the prefix, so an installed tree can be moved.
include(CMakePackageConfigHelpers)

set(_rk_libraries rematkit_core)
set(_rk_header_excludes)
foreach(part flax io)
  string(TOUPPER ${part} _rk_part)
  if(REMATKIT_${_rk_part}_ENABLED)
    list(APPEND _rk_libraries rematkit_${part})
  else()
    list(APPEND _rk_header_excludes PATTERN ${part} EXCLUDE)
  endif()
endforeach()
# rematkit::sweep (rematkit/sweep.hpp) comes with the tools.
if(REMATKIT_TOOLS_ENABLED)
  list(APPEND _rk_libraries rematkit_sweep)
  install(DIRECTORY sweep/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
# rematkit::mpi (rematkit/mpi/: a mesh's devices as MPI ranks) where Open MPI was found.
if(REMATKIT_MPI_ENABLED)
  list(APPEND _rk_libraries rematkit_mpi)
  install(DIRECTORY mpi/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
if(NOT REMATKIT_FLAX_ENABLED)
  list(APPEND _rk_header_excludes PATTERN random EXCLUDE)
endif()

install(DIRECTORY framework/include/ ${REMATKIT_GENERATED_INCLUDE_DIR}/ plugins/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${_rk_header_excludes})
install(TARGETS ${_rk_libraries} rematkit_plugin_sdk EXPORT rematkitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${REMATKIT_POLICY_PLUGINS} ${REMATKIT_BACKEND_PLUGINS}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/rematkit/plugins)

# The program finds the core library (and through it the plugins) relative to itself.
if(TARGET rematkit)
  file(RELATIVE_PATH _rk_bin_to_lib "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
  set_target_properties(rematkit PROPERTIES INSTALL_RPATH "$ORIGIN/${_rk_bin_to_lib}")
  install(TARGETS rematkit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(_rk_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/rematkit)
install(EXPORT rematkitTargets NAMESPACE rematkit:: DESTINATION ${_rk_cmake_dir})
configure_package_config_file(cmake/rematkitConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/rematkitConfig.cmake
  INSTALL_DESTINATION ${_rk_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/rematkitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)  # 0.x: a minor release may change the C++ API
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rematkitConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/rematkitConfigVersion.cmake
  cmake/rematkitPlugin.cmake cmake/rematkit_plugin.map DESTINATION ${_rk_cmake_dir})

# pkg-config: rematkit (the core), rematkit-flax and rematkit-io; the prefix is found from the .pc
# file's own place.
file(RELATIVE_PATH _rk_pc_to_prefix "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" _rk_pc_to_prefix "${_rk_pc_to_prefix}")
foreach(library ${_rk_libraries})
  if(library STREQUAL "rematkit_core")
    set(_rk_pc_name rematkit)
    set(_rk_pc_description "Gradient-checkpointing (rematerialization) policies in C++: plan, run and train under JAX's checkpoint policies")
    set(_rk_pc_requires "")
  else()
    string(REPLACE "rematkit_" "" _rk_part ${library})
    set(_rk_pc_name rematkit-${_rk_part})
    set(_rk_pc_description "rematkit::${_rk_part}")
    set(_rk_pc_requires "Requires: rematkit = ${PROJECT_VERSION}")
  endif()
  set(_rk_pc_library ${library})
  configure_file(cmake/rematkit.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${_rk_pc_name}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${_rk_pc_name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
