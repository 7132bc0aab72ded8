# SPDX-License-Identifier: Apache-2.0
# Where our ELF files look for libraries (issue 51). CMake's default build-tree RPATH adds the folder of
# every library a target links and every link directory its dependencies name: torch's MKL code, with
# an empty MKL_ROOT, names /lib/intel64, /lib/intel64_win and /lib/win-x64, and an empty element came
# with them, which the loader reads as the working directory. The worker then loaded any libspdlog.so,
# libstdc++.so.6 or libc.so.6 found where the user stood (or in its glibc-hwcaps/x86-64-v2..v4 folders),
# running its code inside every trial. So nothing is derived: every target is linked, in the build tree
# too, with the search path it names itself (INSTALL_RPATH: torch's lib folder for torch targets,
# $ORIGIN-relative in the pip package, cmake/Wheel.cmake), and `cmake --install` copies it unchanged.
# A target that names none has none (the front).
#
# The check (cmake/RpathCheck.cmake) runs after every link of every executable, shared library and
# module: the file's search path must be exactly what its target names, with only absolute existing
# folders or $ORIGIN-relative ones. ra_check_rpaths() adds it to the targets of the directory that calls
# it (add_custom_command(TARGET) works only there); ra_require_rpath_checks() fails the configure step
# when a directory's ELF target has none. The ctest `rpath` reads every ELF file of the build tree.
set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH OFF)
set(RA_RPATH_CHECK_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/RpathCheck.cmake)

function(ra_check_rpaths)
  get_property(targets DIRECTORY PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY)$")
      add_custom_command(TARGET ${target} POST_BUILD
                         COMMAND ${CMAKE_COMMAND} -DFILE=$<TARGET_FILE:${target}>
                                 "-DINTENDED=$<JOIN:$<TARGET_GENEX_EVAL:${target},$<TARGET_PROPERTY:${target},INSTALL_RPATH>>,:>"
                                 -P ${RA_RPATH_CHECK_SCRIPT}
                         VERBATIM)
      set_property(TARGET ${target} PROPERTY RA_RPATH_CHECKED ON)
    endif()
  endforeach()
endfunction()

# The calling directory and every directory under it.
function(ra_require_rpath_checks)
  set(dirs ${CMAKE_CURRENT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      get_target_property(checked ${target} RA_RPATH_CHECKED)
      if(type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY)$" AND NOT checked)
        message(FATAL_ERROR "${target} (${dir}) has no search path check: call ra_check_rpaths() at the end of "
                            "${dir}/CMakeLists.txt (cmake/Rpath.cmake)")
      endif()
    endforeach()
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
  endwhile()
endfunction()
