# SPDX-License-Identifier: Apache-2.0
# Run at build time (cmake -P): writes the bash and zsh completion scripts that the built binary
# generates from its own command table into OUT_DIR.
foreach(shell bash zsh)
  if(shell STREQUAL "bash")
    set(out "${OUT_DIR}/repro-audit.bash")
  else()
    set(out "${OUT_DIR}/_repro-audit")
  endif()
  execute_process(COMMAND "${BINARY}" __completion ${shell} OUTPUT_FILE "${out}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "repro-audit __completion ${shell} failed: ${rc}")
  endif()
endforeach()
