// SPDX-License-Identifier: Apache-2.0
// Writes the seed inputs the tool itself would write for the harnesses whose files are made by
// children (trace files, probe logs, trial results); run by hand: ./dev fuzz builds it as
// fuzz_make_corpus, and `build-fuzz/fuzz_make_corpus tests/fuzz/corpus` refreshes them.
#include "audit/trace/trace_io.h"
#include "audit/trial/probe_protocol.h"
#include "audit/trial/trial_spec.h"

#include <cstdio>
#include <fstream>
#include <string>

namespace {

ra::trace::Record record(uint64_t order, const char* op, const char* kind, int64_t parent) {
  ra::trace::Record r;
  r.order = order;
  r.op = op;
  r.kind = kind;
  r.phase = parent < 0 ? "forward" : "backward";
  r.parent = parent;
  r.seq = static_cast<int64_t>(order);
  r.module = "encoder.0";
  r.source = "model.py:12";
  r.scalars = "00112233445566ff";
  r.inputs = {{"float32", {2, 3}, "0123456789abcdef0123456789abcdef"}, {"", {}, ""}};
  r.outputs = {{"float32", {2, 3}, "fedcba9876543210fedcba9876543210"}};
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus CORPUS_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  ra::trace::Trace t;
  t.records = {record(0, "aten::linear", "op", -1), record(1, "AddmmBackward0", "node", -1),
               record(2, "aten::mm", "op", 1)};
  t.capacity = 1024;
  t.device = "cpu";
  ra::trace::write_trace(dir + "/trace/seed-three-records", t);
  t.records.clear();
  ra::trace::write_trace(dir + "/trace/seed-empty", t);

  ra::TrialResult header;
  header.switches = {{"deterministic", "on", "on"}, {"threads", "", "2"}};
  ra::TrialResult probe;
  probe.tensors = {{"output", "float32", {4, 4}, "0123456789abcdef0123456789abcdef"}};
  probe.alerts = {"index_add_cuda_ does not have a deterministic implementation"};
  probe.wall_ms = 1.5;
  std::ofstream(dir + "/probe_log/seed-complete") << ra::probe_begin_line(header) << ra::probe_start_line("index_add")
                                                  << ra::probe_result_line("index_add", probe) << ra::probe_end_line();
  std::ofstream(dir + "/probe_log/seed-died") << ra::probe_begin_line(header) << ra::probe_start_line("put");
  std::ofstream(dir + "/probe_log/seed-restart")
      << ra::probe_begin_line(header) << ra::probe_start_line("a") << ra::probe_result_line("a", probe)
      << ra::probe_restart_line("sticky device error");
  std::ofstream(dir + "/probe_log/seed-result") << ra::to_json(probe).dump();
  return 0;
}
