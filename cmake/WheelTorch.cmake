# SPDX-License-Identifier: Apache-2.0
# The pip build's torch (cmake/Wheel.cmake has the rest of what the pip build does differently),
# included before project(): the torch installed in the environment that runs pip, found as the
# launcher finds it at every start, without importing torch (python/repro_audit/_torch_locate.py),
# and checked first, so that a torch repro-audit does not support is the first line of pip's
# output, with pip's advice, before CMake's own lines (and never a page from torch's headers).

# The torch of the Python that runs the build (scikit-build-core passes it as Python_EXECUTABLE).
set(_ra_python "${Python_EXECUTABLE}")
if(NOT _ra_python)
  set(_ra_python "${PYTHON_EXECUTABLE}")
endif()
execute_process(COMMAND "${_ra_python}" "${CMAKE_CURRENT_SOURCE_DIR}/python/repro_audit/_torch_locate.py"
                OUTPUT_VARIABLE _ra_torch ERROR_VARIABLE _ra_torch_err RESULT_VARIABLE _ra_rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _ra_rc EQUAL 0)
  message(NOTICE "repro-audit builds against the torch installed in this environment, and ${_ra_python} finds "
                 "none: pip install torch first, then pip install --no-build-isolation again")
  message(FATAL_ERROR "no torch in the environment (the line above)")
endif()
list(GET _ra_torch 0 RA_WHEEL_TORCH_DIR)
list(GET _ra_torch 1 RA_WHEEL_TORCH_VERSION)
ra_check_torch_release("${RA_WHEEL_TORCH_VERSION}" "pip install 'torch>=${RA_TORCH_MIN}', then pip install "
                       "--no-build-isolation again")
