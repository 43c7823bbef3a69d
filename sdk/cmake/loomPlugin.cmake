# loom_add_plugin(NAME SOURCES...) builds a loom plugin: a shared module
# named NAME.so that exports only loom_module_entry and has no undefined
# symbols. Used by loom's own plugins and by third parties through
# find_package(loom).
get_filename_component(_LOOM_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_FILE}" DIRECTORY)
set(LOOM_PLUGIN_VERSION_SCRIPT "${_LOOM_PLUGIN_CMAKE_DIR}/loom_plugin.map" CACHE INTERNAL "")

function(loom_add_plugin name)
  add_library(${name} MODULE ${ARGN})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    C_VISIBILITY_PRESET hidden
    LINK_DEPENDS "${LOOM_PLUGIN_VERSION_SCRIPT}")
  target_link_options(${name} PRIVATE "-Wl,--version-script=${LOOM_PLUGIN_VERSION_SCRIPT}")
  # clang links the sanitizer runtime into executables only, so a sanitized
  # plugin has undefined __asan_* symbols until the host loads it.
  if(NOT (LOOM_SANITIZE AND CMAKE_C_COMPILER_ID STREQUAL "Clang"))
    target_link_options(${name} PRIVATE "-Wl,--no-undefined")
  endif()
  if(TARGET loom::sdk)
    target_link_libraries(${name} PRIVATE loom::sdk)
  endif()
  if(DEFINED LOOM_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${LOOM_PLUGIN_OUTPUT_DIR}")
  endif()
  if(DEFINED LOOM_PLUGIN_INSTALL_DIR)
    install(TARGETS ${name} LIBRARY DESTINATION "${LOOM_PLUGIN_INSTALL_DIR}")
  endif()
endfunction()

# loom_add_lua_plugin(FILE) copies a Lua plugin next to the built-in .so
# plugins and installs it with them.
function(loom_add_lua_plugin file)
  get_filename_component(_name "${file}" NAME)
  configure_file("${file}" "${LOOM_PLUGIN_OUTPUT_DIR}/${_name}" COPYONLY)
  install(FILES "${file}" DESTINATION "${LOOM_PLUGIN_INSTALL_DIR}")
endfunction()
