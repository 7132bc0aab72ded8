# SPDX-License-Identifier: Apache-2.0
# The pip build: `pip install --no-build-isolation .` (pyproject.toml, scikit-build-core), included
# only when scikit-build-core runs CMake (SKBUILD). What differs from ./dev's build:
#   * torch is the one installed in the environment that runs pip, found and checked before anything
#     else (cmake/WheelTorch.cmake, before project()); its share/cmake goes on CMAKE_PREFIX_PATH and
#     its version into repro_audit/_build_info.py, which the launcher compares with the installed
#     torch before it execs the front.
#   * The Debian build dependencies (not on PyPI) are looked for first, and the missing ones are
#     named in one line with the apt command, instead of CMake's page on a package configuration file.
#   * The tests are not configured (RA_TESTS=OFF, pyproject.toml): doctest is not needed.
#   * The layout. The install prefix is site-packages/repro_audit (wheel.install-dir), so the wheel
#     holds the prefix layout of `cmake --install` inside the package: repro_audit/bin/repro-audit,
#     repro_audit/libexec/repro-audit/repro-audit-worker (and the CUDA digest module beside it),
#     repro_audit/share/repro-audit/. The front finds the worker and share/ by its one rule
#     (audit/common/paths.h). The torch binaries' RPATH is relative to their own folder:
#     libexec/repro-audit/../../../torch/lib is site-packages/torch/lib, whatever the Python minor,
#     with no LD_LIBRARY_PATH. No auditwheel runs, so nothing is renamed or vendored.

# Its real path: compile lines then name torch's headers as any other build against the same torch
# does, so ccache's hits carry over (a venv may reach torch through a link).
file(REAL_PATH "${RA_WHEEL_TORCH_DIR}" _ra_torch_real)
list(PREPEND CMAKE_PREFIX_PATH "${_ra_torch_real}/share/cmake")

# The Debian build dependencies, named together in one line when any is missing.
set(_ra_missing "")
foreach(_ra_dep "CLI11 2.1 libcli11-dev" "nlohmann_json 3.11 nlohmann-json3-dev" "fmt 9 libfmt-dev"
        "spdlog 1.10 libspdlog-dev")
  string(REPLACE " " ";" _ra_dep "${_ra_dep}")
  list(GET _ra_dep 0 _ra_name)
  list(GET _ra_dep 1 _ra_version)
  list(GET _ra_dep 2 _ra_package)
  find_package(${_ra_name} ${_ra_version} QUIET)
  if(NOT ${_ra_name}_FOUND)
    list(APPEND _ra_missing ${_ra_package})
  endif()
endforeach()
find_package(re2 9 CONFIG QUIET)
find_package(PkgConfig QUIET)
if(NOT TARGET re2::re2 AND PKG_CONFIG_FOUND)
  pkg_check_modules(_RA_RE2_PROBE QUIET re2)
endif()
if(NOT TARGET re2::re2 AND NOT _RA_RE2_PROBE_FOUND)
  list(APPEND _ra_missing libre2-dev pkgconf)
endif()
if(_ra_missing)
  list(JOIN _ra_missing " " _ra_missing)
  # NOTICE prints the line as it is (FATAL_ERROR would wrap it); the error follows.
  message(NOTICE "repro-audit needs Debian packages that are not on PyPI: sudo apt-get install ${_ra_missing}")
  message(FATAL_ERROR "missing Debian build packages (the line above)")
endif()

# ra_wheel_layout(): after every target is defined. The relative RPATH, and the build's torch for
# the launcher.
function(ra_wheel_layout)
  set(rpath "$ORIGIN/../../../torch/lib")  # site-packages/repro_audit/libexec/repro-audit -> site-packages/torch/lib
  set_target_properties(repro-audit-worker PROPERTIES INSTALL_RPATH "${rpath}")
  if(TARGET repro-audit-digest-cuda)
    set_target_properties(repro-audit-digest-cuda PROPERTIES INSTALL_RPATH "${rpath}")
  endif()
  set(RA_CUDA_DIGEST_BUILT False)
  if(TARGET repro-audit-digest-cuda)
    set(RA_CUDA_DIGEST_BUILT True)
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/python/repro_audit/_build_info.py.in
                 ${PROJECT_BINARY_DIR}/_build_info.py @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/_build_info.py DESTINATION ${SKBUILD_PLATLIB_DIR}/repro_audit)
endfunction()
