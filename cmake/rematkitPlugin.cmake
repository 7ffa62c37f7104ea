# rematkit_add_plugin(<target> SOURCES <files...> [LIBS <libs...>] [OUTPUT_DIRECTORY <dir>])
# Builds a rematkit plugin: a MODULE library that sees only the C ABI (rematkit::plugin_sdk),
# exports nothing but rk_plugin_get_api, and lands in lib/rematkit/plugins of the build tree,
# where rematkit finds it (OUTPUT_DIRECTORY puts it elsewhere). Works in rematkit's tree and, after
# find_package(rematkit), in any project.
set(_REMATKIT_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/rematkit_plugin.map")

function(rematkit_add_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_OUTPUT_DIRECTORY)
    set(ARG_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib/rematkit/plugins")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE rematkit::plugin_sdk ${ARG_LIBS})
  set_target_properties(${target} PROPERTIES
    C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options(${target} PRIVATE "LINKER:--version-script=${_REMATKIT_PLUGIN_MAP}")
  endif()
endfunction()
