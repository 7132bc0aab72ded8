# SPDX-License-Identifier: Apache-2.0
# Validates the JUnit files that unit_tests and cli_tests wrote into DIR (the renderer on
# hand-built reports with every verdict, and the CLI on real models) against share/schema/junit.xsd.
# Fails, never skips, when xmllint is missing: ./dev installs libxml2-utils.
find_program(XMLLINT xmllint)
if(NOT XMLLINT)
  message(FATAL_ERROR "xmllint not found (Debian package libxml2-utils; ./dev test installs it)")
endif()
foreach(name ${EXPECTED})
  if(NOT EXISTS "${DIR}/${name}")
    message(FATAL_ERROR "missing ${DIR}/${name}: the test that writes it did not run or failed")
  endif()
  execute_process(COMMAND "${XMLLINT}" --noout --schema "${SCHEMA}" "${DIR}/${name}" RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} does not validate against ${SCHEMA}:\n${err}")
  endif()
  message(STATUS "${name}: valid")
endforeach()
