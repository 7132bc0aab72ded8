// SPDX-License-Identifier: Apache-2.0
// Drives the real binary end to end: builds models with torch::jit (no Python), runs
// `repro-audit` as a user would, and reads back exit code, stdout, stderr and the JSON report.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace at {
class Tensor;
}
namespace c10 {
class IValue;
}

namespace ra::test {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

// Models several test files use (TorchScript source for save_model):
// relu(x @ w), with a parameter w;
inline constexpr const char* kLinearReluModel = R"JIT(
def forward(self, x):
    return torch.relu(torch.matmul(x, self.w))
)JIT";
// x * 2.0, without parameters: elementwise, so every row's bits are its own at any batch size;
inline constexpr const char* kDoubleModel = R"JIT(
def forward(self, x):
    return x * 2.0
)JIT";
// the test-only nondeterministic op after a matmul, with w of 64x4096 (needs test_ops_library()).
inline constexpr const char* kNondetSumModel = R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    return ra_test.nondet_sum(h) * 2.0
)JIT";

// the test-only op without a deterministic implementation (raises under det, else nondet_sum), with
// w of 16x64 (needs test_ops_library()).
inline constexpr const char* kNondetAlertModel = R"JIT(
def forward(self, x):
    return ra_test.nondet_alert(torch.matmul(x, self.w).repeat(1, 64))
)JIT";
// the test-only op that segfaults with one intra-op thread and hangs with three, after a matmul,
// with w of 8x8 (needs test_ops_library()).
inline constexpr const char* kFaultModel = R"JIT(
def forward(self, x):
    return ra_test.fault(torch.matmul(x, self.w))
)JIT";
// Runs RA_BINARY with `args`; stdout and stderr are captured separately.
CliResult run_cli(const std::vector<std::string>& args);

// A fresh folder, removed at the end of the test.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Saves a TorchScript module with one float parameter per (name, shape), one zero-filled buffer
// per entry of `zero_buffers`, and `source` as its code; it has a `training` attribute, as
// scripted nn.Modules do.
void save_model(const std::string& path, const std::string& source,
                const std::vector<std::pair<std::string, std::vector<int64_t>>>& params,
                const std::vector<std::pair<std::string, std::vector<int64_t>>>& zero_buffers = {});

// torch.save-compatible file of an IValue.
void save_value(const std::string& path, const c10::IValue& value);

nlohmann::json read_json(const std::string& path);
// The whole file as bytes ("" when it cannot be read).
std::string read_file(const std::string& path);
bool file_exists(const std::string& path);
// `dir`/`name`, with `dir` created and any stale `name` removed: where a test writes a file that
// a later ctest test validates (RA_REPORT_DIR, RA_JUNIT_DIR), so that an old file never passes.
std::string fresh(const std::string& dir, const std::string& name);
int count_lines(const std::string& text);

const char* test_ops_library();

// What the batch-invariance probes should find here for each op ("mm", "layer_norm", "linear", ...),
// measured by the venv's torch in Python (tests/batch/batch_classes.py): {"mm": [[1, 2, 3], [4, ...]]}.
// Fails the test when Python cannot measure.
nlohmann::json python_batch_classes(const std::vector<std::string>& ops);

// The release of the torch this build was made against, as its Python says ("2.15.0", without a
// "+cu130" local tag), so that no test pins one release.
std::string python_torch_version();

// What a folder the tool writes beside a file (BASELINE.tensors, REPORT.tensors) must not replace,
// planted in `dir` as `<name>.json.tensors`: a regular file ("file"), a folder of the user's
// ("foreign"), a copy of `ours` (a folder the tool wrote) with one more file of the user's ("extra"),
// and a symlink to `ours` ("link"). Returns each name with the words its refusal must say;
// check_folder_obstacles then checks that each is still as planted.
std::vector<std::pair<std::string, std::string>> plant_folder_obstacles(const TempDir& dir, const std::string& ours);
void check_folder_obstacles(const TempDir& dir);

// Runs `args` plus `--report <dir>/report.json` (unless args name --report), and checks what every
// bad input must give: exit `code`, one stderr line "repro-audit: ..." containing `message`,
// nothing on stdout, and no report file.
void expect_error(const TempDir& dir, std::vector<std::string> args, int code, const std::string& message);

}  // namespace ra::test
