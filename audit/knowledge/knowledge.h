// SPDX-License-Identifier: Apache-2.0
// knowledge/: the knowledge base of nondeterministic ops, lint, and probe findings against it.
// The knowledge base: what PyTorch documents (and what is known beyond the documentation) about
// nondeterministic ops, read from one data file in share/ (share/knowledge/ops.json). It drives
// `lint`, the documented status that `probes --list` shows, and the comparison of measured
// behaviour against the documentation in `probes` reports. Torch-free.
//
// The shipped file has one entry per row of torch's use_deterministic_algorithms docstring (the
// interpolate row one per mode) and per known undocumented source (SDPA backward, cuBLAS
// workspace, cuDNN benchmark, TF32, cuDNN RNN, CPU thread count, MKL CBWR, uninitialized memory);
// the fields are described on KnowledgeEntry below. Severity `note` marks a configuration or
// machine dependence, which lint does not fail on without --strict. The loader rejects unknown
// keys and switches, and an entry whose `documented` and `behaviour.deterministic` disagree; the
// unit tests load the shipped file and check that a probe covers every entry.
#pragma once

#include "audit/common/device.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra {

// What PyTorch's `use_deterministic_algorithms` documentation says about an entry.
enum class Documented {
  MadeDeterministic,  // listed as made deterministic when mode=True
  Raises,             // listed as raising when mode=True
  Undocumented,       // a known source of nondeterminism the list does not cover
};
const char* to_string(Documented d);

// Behaviour of an entry under one switch.
enum class Behaviour {
  MadeDeterministic,  // the switch makes it reproducible
  Raises,             // the switch makes it raise a determinism error
  Unaffected,         // the switch does not change it
  Introduces,         // the switch causes the nondeterminism (e.g. cudnn.benchmark)
  ChangesResults,     // the switch changes results reproducibly (e.g. TF32): configuration dependence
};
const char* to_string(Behaviour b);

// What the probe suite measured for an entry on one machine, kept beside what is documented (the
// `measured` list of an entry). Where the two disagree, the measurement wins: lint states the
// measured behaviour under deterministic mode and shows the documented one beside it.
struct Measurement {
  std::string device;                           // "NVIDIA H200"
  std::string device_type;                      // "cuda" or "cpu"
  std::string torch;                            // "2.11.0+cu130"
  std::string cuda;                             // "13.0", "" on the CPU
  std::string cudnn;                            // "91900", "" when none
  std::string date;                             // "2026-11-26"
  std::string probe;                            // the probe that measured it, "sdpa.cudnn.backward"
  std::map<std::string, std::string> observed;  // configuration -> reproducible | diverged | raised
  std::string evidence;                         // the report file, relative to the repository
  std::string note;                             // anything else seen, "" when nothing
};

// The behaviour under use_deterministic_algorithms that a measurement shows: made-deterministic
// (diverged under default, reproducible under det), raises, unaffected (diverged under det), or
// nullopt when it says nothing about det (det not measured, or nothing diverged without it).
std::optional<Behaviour> measured_under_det(const Measurement& m);

// "NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0, cuDNN 91900), 2026-11-26: default diverged, det diverged"
std::string describe(const Measurement& m);

struct KnowledgeEntry {
  std::string id;       // "index_add.cuda"
  std::string title;    // "torch.index_add on CUDA tensors"
  std::string doc_row;  // the documentation's row, "" for undocumented entries
  Documented documented = Documented::Undocumented;
  std::vector<std::string> ops;  // graph ops lint matches: "aten::index_add"
  // Constant-argument conditions, as JSON text: {"accumulate": "true"}, {"reduce": "[\"sum\",\"mean\"]"} (any
  // of a list). An op of the entry that has no such argument is not constrained by it.
  std::map<std::string, std::string> args;
  // Constant arguments under which the op is known to be deterministic, same form: the finding is
  // dropped when one holds ({"output_size": [[1, 1], 1]}: global pooling is a mean). A list of
  // integers matches an int[] argument element for element.
  std::map<std::string, std::string> unless;
  // "error": run-to-run nondeterminism (lint exits 1); "note": a configuration or machine
  // dependence, or nondeterminism only under a non-default switch (exit 0 unless --strict).
  std::string severity;
  // "run-to-run" (the default): the op's bits change between runs or configurations;
  // "batch-invariance": a row's result depends on the batch it shares (the batch-invariance probes
  // measured it). lint reports the latter as notes, as errors with --batch-invariance.
  std::string concern = "run-to-run";
  std::string device;                          // "cuda", "cpu" or "any"
  std::string direction;                       // "forward" or "backward"
  std::string condition;                       // when it is nondeterministic, in words
  std::map<std::string, Behaviour> behaviour;  // switch key (config.h) -> behaviour; others: unaffected
  std::string alert;   // the name in the alert "<alert> does not have a deterministic implementation", or ""
  std::string advice;  // what to do about it
  std::vector<Measurement> measured;  // what probes measured on real machines, in the file's order
  // The first measurement on `device`'s type that says what deterministic mode does, or nullptr.
  const Measurement* measured_on(const Device& device) const;
};

struct KnowledgeBase {
  std::string torch_version;  // the torch version the file describes, "2.11"
  std::string source;         // where the documented rows come from
  std::vector<KnowledgeEntry> entries;

  const KnowledgeEntry* find(const std::string& id) const;
  // True when the entry concerns `device`'s type (cpu or cuda).
  static bool applies_to(const KnowledgeEntry& e, const Device& device);
  // The behaviour under `key`, Unaffected when the entry does not name it.
  static Behaviour behaviour_under(const KnowledgeEntry& e, const std::string& key);
};

// Parses and validates a knowledge-base file; throws InputError with the file, the entry and the
// field for anything malformed (unknown keys included).
KnowledgeBase load_knowledge(const std::string& path);
KnowledgeBase parse_knowledge(const std::string& json_text, const std::string& origin);

// The installed (or source-tree) knowledge base: share_dir()/knowledge/ops.json.
std::string knowledge_path();

}  // namespace ra
