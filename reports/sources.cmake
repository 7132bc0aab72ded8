# SPDX-License-Identifier: Apache-2.0
# The files of ra_reports, relative to reports/: one list that the tool's build (reports/CMakeLists.txt)
# and the fuzz build (tests/fuzz/CMakeLists.txt) both read, so that a renamed file cannot break only one.
set(RA_REPORTS_SOURCES
  model.cpp core_model.cpp target_model.cpp trace_model.cpp replay_model.cpp baseline_model.cpp
  selftest_model.cpp selftest_render.cpp json.cpp core_json.cpp trace_json.cpp probe_json.cpp replay_json.cpp
  exec_json.cpp target_json.cpp baseline_json.cpp fleet_json.cpp selftest_json.cpp text.cpp lint_json.cpp
  lint_text.cpp lint_sarif.cpp probes_render.cpp run_render.cpp exec_render.cpp baseline_text.cpp junit.cpp
  markdown.cpp baseline_file.cpp diff_json.cpp diff_text.cpp utf8.cpp html.cpp html_environment.cpp
  html_sections.cpp html_details.cpp html_baseline.cpp html_escape.cpp escape.cpp invariance_json.cpp
  invariance_render.cpp invariance_fix_json.cpp invariance_fix_render.cpp invariance_outputs.cpp
  referee_model.cpp referee_json.cpp)
