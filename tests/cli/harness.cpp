// SPDX-License-Identifier: Apache-2.0
#include "tests/cli/harness.h"

#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <ftw.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" int ra_test_ops_anchor();

namespace ra::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Resolves `torch.*` to ATen as the native resolver does, and `ra_test.*` to the test-only ops.
struct TestOpsResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction&,
                                                         const torch::jit::SourceRange&) override {
    if (name == "torch") return std::make_shared<torch::jit::BuiltinModule>("aten");
    if (name == "ra_test") return std::make_shared<torch::jit::BuiltinModule>("ra_test");
    return nullptr;
  }
  c10::TypePtr resolveType(const std::string&, const torch::jit::SourceRange&) override { return nullptr; }
};

}  // namespace

CliResult run_cli(const std::vector<std::string>& args) {
  TempDir io;
  std::string cmd = quote(RA_BINARY);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote(io.file("out")) + " 2>" + quote(io.file("err")) + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(io.file("out"));
  r.err = slurp(io.file("err"));
  return r;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/ra-test-XXXXXX";
  if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  ::nftw(
      path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p) == 0 ? 0 : 0; }, 16,
      FTW_DEPTH | FTW_PHYS);
}

void save_model(const std::string& path, const std::string& source,
                const std::vector<std::pair<std::string, std::vector<int64_t>>>& params,
                const std::vector<std::pair<std::string, std::vector<int64_t>>>& zero_buffers) {
  (void)ra_test_ops_anchor();  // keeps the ra_test ops registered in this process
  torch::jit::Module m("TestModel");
  m.register_attribute("training", c10::BoolType::get(), true);  // as torch.jit.script gives every nn.Module
  uint64_t seed = 1;
  for (const auto& [name, shape] : params) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed++);
    m.register_parameter(name, at::randn(shape, gen), false);
  }
  for (const auto& [name, shape] : zero_buffers) m.register_buffer(name, at::zeros(shape));
  m.define(source, std::make_shared<TestOpsResolver>());
  m.save(path);
}

void save_value(const std::string& path, const c10::IValue& value) {
  const std::vector<char> bytes = torch::jit::pickle_save(value);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(slurp(path)); }

std::string read_file(const std::string& path) { return slurp(path); }

std::string fresh(const std::string& dir, const std::string& name) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::filesystem::remove(path);
  return path;
}

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

const char* test_ops_library() { return RA_TEST_OPS; }

std::vector<std::pair<std::string, std::string>> plant_folder_obstacles(const TempDir& dir, const std::string& ours) {
  namespace fs = std::filesystem;
  std::ofstream(dir.file("file.json.tensors")) << "precious";
  fs::create_directory(dir.file("foreign.json.tensors"));
  std::ofstream(dir.file("foreign.json.tensors/precious.txt")) << "mine";
  fs::copy(ours, dir.file("extra.json.tensors"));
  std::ofstream(dir.file("extra.json.tensors/precious.txt")) << "mine";
  fs::create_directory_symlink(ours, dir.file("link.json.tensors"));
  return {{"file", "it is a regular file"},
          {"foreign", "it is a folder without repro-audit.manifest"},
          {"extra", "it holds 'precious.txt', which repro-audit did not write"},
          {"link", "it is a symlink"}};
}

void check_folder_obstacles(const TempDir& dir) {
  CHECK(read_file(dir.file("file.json.tensors")) == "precious");
  CHECK(read_file(dir.file("foreign.json.tensors/precious.txt")) == "mine");
  CHECK(read_file(dir.file("extra.json.tensors/precious.txt")) == "mine");
  CHECK(file_exists(dir.file("extra.json.tensors/repro-audit.manifest")));
  CHECK(std::filesystem::is_symlink(dir.file("link.json.tensors")));
}

void expect_error(const TempDir& dir, std::vector<std::string> args, int code, const std::string& message) {
  if (std::find(args.begin(), args.end(), "--report") == args.end()) {
    args.push_back("--report");
    args.push_back(dir.file("report.json"));
  }
  const auto r = run_cli(args);
  CAPTURE(r.err);
  CHECK(r.code == code);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.rfind("repro-audit: ", 0) == 0);
  CHECK(r.err.find(message) != std::string::npos);
  CHECK(r.out.empty());
  CHECK(!file_exists(dir.file("report.json")));
}

namespace {

// What `command` prints on stdout; fails the test when it cannot run or exits with another status than 0.
std::string command_output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run " << command);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  REQUIRE_MESSAGE(status == 0, command << " failed: " << out);
  return out;
}

}  // namespace

nlohmann::json python_batch_classes(const std::vector<std::string>& ops) {
  std::string command = std::string(RA_TORCH_PYTHON) + " " + RA_BATCH_CLASSES;
  for (const auto& op : ops) command += " " + op;
  return nlohmann::json::parse(command_output(command));
}

std::string python_torch_version() {
  std::string out =
      command_output(std::string(RA_TORCH_PYTHON) + " -c 'import torch; print(torch.__version__.split(\"+\")[0])'");
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace ra::test
