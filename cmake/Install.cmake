# `cmake --install build --prefix P` puts into P: the headers (include/rematkit), the core library
# and the rematkit program, the built-in plugins (lib/rematkit/plugins, found beside the core
# library at run time), a CMake package (find_package(rematkit): rematkit::core,
# rematkit::plugin_sdk, rematkit_add_plugin()) and a pkg-config file. Every path is relative to the
# prefix, so an installed tree can be moved.
include(CMakePackageConfigHelpers)

install(DIRECTORY framework/include/ plugins/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS rematkit_core rematkit_plugin_sdk EXPORT rematkitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${REMATKIT_POLICY_PLUGINS} ${REMATKIT_BACKEND_PLUGINS}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/rematkit/plugins)

# The program finds the core library (and through it the plugins) relative to itself.
file(RELATIVE_PATH _rk_bin_to_lib "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
set_target_properties(rematkit PROPERTIES INSTALL_RPATH "$ORIGIN/${_rk_bin_to_lib}")
install(TARGETS rematkit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(_rk_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/rematkit)
install(EXPORT rematkitTargets NAMESPACE rematkit:: DESTINATION ${_rk_cmake_dir})
configure_package_config_file(cmake/rematkitConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/rematkitConfig.cmake
  INSTALL_DESTINATION ${_rk_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/rematkitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)  # 0.x: a minor release may change the C++ API
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rematkitConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/rematkitConfigVersion.cmake
  cmake/rematkitPlugin.cmake cmake/rematkit_plugin.map DESTINATION ${_rk_cmake_dir})

# pkg-config: the prefix is found from the .pc file's own place.
file(RELATIVE_PATH _rk_pc_to_prefix "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" _rk_pc_to_prefix "${_rk_pc_to_prefix}")
configure_file(cmake/rematkit.pc.in ${CMAKE_CURRENT_BINARY_DIR}/rematkit.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rematkit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
