# SPDX-License-Identifier: Apache-2.0
# RE2 (exec's --metric matcher: linear time, bounded memory; audit/exec/metrics.h) as re2::re2.
# re2 releases from 2023 on install a CMake package, found first (version 9 or later: its version
# follows the library's SONAME, and Debian 12's libre2.so.9 is the oldest we build with). Older
# ones, Debian 12's libre2-dev among them, ship only re2.pc, whose Version reads 0.0.0; there the
# minimum is checked on the SONAME the library file carries. Shared by the tool and tests/fuzz.
find_package(re2 9 CONFIG QUIET)
if(NOT TARGET re2::re2)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(RA_RE2 REQUIRED IMPORTED_TARGET GLOBAL re2)
  find_library(RA_RE2_LIBRARY re2 HINTS ${RA_RE2_LIBRARY_DIRS})
  file(GLOB _ra_re2_sonames "${RA_RE2_LIBRARY}.*")
  set(_ra_re2_soversion 0)
  foreach(f ${_ra_re2_sonames})
    if(f MATCHES "\\.so\\.([0-9]+)$" AND CMAKE_MATCH_1 GREATER _ra_re2_soversion)
      set(_ra_re2_soversion ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(_ra_re2_soversion LESS 9)
    message(FATAL_ERROR "re2 at ${RA_RE2_LIBRARY} is too old (SONAME ${_ra_re2_soversion}, 9 or later needed): install libre2-dev")
  endif()
  # re2.pc's -pthread would define _REENTRANT in our sources, which the precompiled headers were not
  # built with; threads come with Threads::Threads instead.
  set_target_properties(PkgConfig::RA_RE2 PROPERTIES INTERFACE_COMPILE_OPTIONS "")
  find_package(Threads REQUIRED)
  set_property(TARGET PkgConfig::RA_RE2 APPEND PROPERTY INTERFACE_LINK_LIBRARIES Threads::Threads)
  add_library(re2::re2 ALIAS PkgConfig::RA_RE2)
endif()
