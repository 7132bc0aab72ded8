// SPDX-License-Identifier: Apache-2.0
// `lint`'s door to the one check of a torch.export archive (open_export_archive,
// worker/targets/export_program.h), torch-free so that the services, which include no LibTorch
// header, hand it to lint_model (worker/lint/lint_graph.h).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace ra::targets {

// The archive at `path` checked as `run` checks it, its weights declared rather than read
// (WeightData::Declared, on the meta device); returns its models/model.json. Throws InputError
// (UsageError where `run` says usage) with the line `run` gives.
nlohmann::json checked_export_model(const std::string& path);

}  // namespace ra::targets
