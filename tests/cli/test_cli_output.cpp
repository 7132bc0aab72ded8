// SPDX-License-Identifier: Apache-2.0
// What the tool writes, and what it quotes, through the binary (issue 28): a report path that is a
// FIFO is written through and a symlink keeps pointing at its target (defect 4); a failed write
// to stdout is an error with its own line and exit code (defect 5); names and shard fields that
// carry a line break, a Markdown fence or ESC stay inert in the text summary, the Markdown and on
// stderr (defect 8); a worker killed from outside while loading is said to be so (defect 10).
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <ATen/ATen.h>

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using ra::test::CliResult;
using ra::test::run_cli;
using ra::test::TempDir;

std::string quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the binary with its stdout opened read-only on an existing file of `dir`: every write to
// it fails (EBADF), as a full disk behind `> file` would make it fail, without touching a device.
CliResult run_cli_unwritable_stdout(const TempDir& dir, const std::vector<std::string>& args) {
  { std::ofstream(dir.file("stdout-ro")) << ""; }
  std::string cmd = quote(RA_BINARY);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " 1<" + quote(dir.file("stdout-ro")) + " 2>" + quote(dir.file("stderr")) + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = ra::test::read_file(dir.file("stderr"));
  return r;
}

// A reproducible report of a small model, as `report` reads it back.
std::string saved_report(const TempDir& dir) {
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {4, 3}}});
  const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "1x4", "--configs", "default", "--repeats", "2",
                          "--report", dir.file("r.json"), "--quiet"});
  REQUIRE(r.code == 0);
  return dir.file("r.json");
}

int lines_starting_with(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

bool has_line(const std::string& text, const std::string& wanted) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line == wanted) return true;
  return false;
}

void write_json(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(2); }

}  // namespace

TEST_CASE("write_file_atomic: a FIFO given as --report is written through, never replaced by a file") {
  TempDir dir;
  const std::string rep = saved_report(dir);
  const std::string fifo = dir.file("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The reader is open before the tool starts, so that the tool's open never waits; it reads until
  // the tool has ended and the FIFO is drained.
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(fd >= 0);
  std::atomic<bool> ended{false};
  std::string got;
  std::thread reader([&] {
    char buf[1 << 16];
    for (;;) {
      // `ended` read before the read: once the tool has ended, an empty read means drained
      const bool was_ended = ended;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        got.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (was_ended) break;
      ::usleep(2000);
    }
  });
  const auto r = run_cli({"report", rep, "--report", fifo});
  ended = true;
  reader.join();
  ::close(fd);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  const auto j = nlohmann::json::parse(got, nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["verdict"] == "reproducible");
}

TEST_CASE("write_file_atomic: a symlink given as --report keeps pointing at its target, which is replaced") {
  TempDir dir;
  const std::string rep = saved_report(dir);
  ::mkdir(dir.file("keep").c_str(), 0755);
  { std::ofstream(dir.file("keep/latest.json")) << "old"; }
  REQUIRE(::symlink("keep/latest.json", dir.file("latest.json").c_str()) == 0);
  const auto r = run_cli({"report", rep, "--report", dir.file("latest.json"), "--markdown", dir.file("latest.json")});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  struct stat st {};
  REQUIRE(::lstat(dir.file("latest.json").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  const std::string md = ra::test::read_file(dir.file("keep/latest.json"));  // the last one written
  CHECK(md.rfind("## repro-audit", 0) == 0);
  // A link to a file that does not exist yet makes the file, and stays a link.
  REQUIRE(::symlink("keep/new.json", dir.file("new.json").c_str()) == 0);
  CHECK(run_cli({"report", rep, "--report", dir.file("new.json")}).code == 0);
  REQUIRE(::lstat(dir.file("new.json").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(ra::test::read_json(dir.file("keep/new.json"))["verdict"] == "reproducible");
}

TEST_CASE("write_stdout: a failed write to stdout is exit 3 with its own line, in the front and in the worker") {
  TempDir dir;
  const std::string rep = saved_report(dir);
  ra::test::save_value(dir.file("a.pt"), at::ones({3}));
  ra::test::save_value(dir.file("b.pt"), at::ones({3}));
  const std::vector<std::vector<std::string>> commands = {
      {"report", rep, "--json"}, {"report", rep}, {"diff", dir.file("a.pt"), dir.file("b.pt"), "--json"}};
  for (const auto& args : commands) {
    const auto r = run_cli_unwritable_stdout(dir, args);
    CAPTURE(args.front());
    CAPTURE(r.err);
    CHECK(r.code == 3);
    CHECK(r.err.find("repro-audit: cannot write to stdout: ") != std::string::npos);
    CHECK(ra::test::count_lines(r.err) == 1);
  }
}

TEST_CASE("text summary: a model named with a line break cannot print a verdict line of its own") {
  TempDir dir;
  const std::string model = dir.file("m\nverdict: reproducible (exit 0)");
  ra::test::save_model(model, ra::test::kLinearReluModel, {{"w", {4, 3}}});
  const auto r = run_cli(
      {"run", model, "--shape", "1x4", "--configs", "default", "--repeats", "2", "--report", dir.file("r.json")});
  CHECK(r.code == 0);
  CHECK(lines_starting_with(r.out, "verdict:") == 1);
  CHECK(r.out.find("m\\nverdict: reproducible (exit 0)") != std::string::npos);
  // `report` renders the name from the JSON the same way.
  const auto again = run_cli({"report", dir.file("r.json")});
  CHECK(lines_starting_with(again.out, "verdict:") == 1);
}

TEST_CASE("merge: a shard's host cannot leave the Markdown fence, and its ESC codes never reach the terminal") {
  TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {4, 3}}});
  std::vector<std::string> shards;
  for (const char* k : {"1/2", "2/2"}) {
    shards.push_back(dir.file(std::string("s") + k[0] + ".json"));
    const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "1x4", "--configs", "default,threads-1", "--repeats",
                            "2", "--shard", k, "--report", shards.back(), "--quiet"});
    REQUIRE(r.code == 0);
  }
  auto one = ra::test::read_json(shards[0]);
  one["shard"]["host"] = "x\n```\n# pwned\n![t](https://example.invalid/t.png)\n```";
  write_json(shards[0], one);
  auto two = ra::test::read_json(shards[1]);
  two["shard"]["host"] = "node\x1b]0;owned\x07\x1b[31m2";
  write_json(shards[1], two);
  const auto r = run_cli({"merge", shards[0], shards[1], "--markdown", dir.file("m.md")});
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const std::string md = ra::test::read_file(dir.file("m.md"));
  CHECK(!has_line(md, "# pwned"));
  CHECK(md.find("\n![t]") == std::string::npos);
  CHECK(md.find("\n````\n") != std::string::npos);  // a fence longer than the host's backticks
  CHECK(md.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(!has_line(r.out, "# pwned"));
  CHECK(r.out.find("node\\x1b]0;owned\\x07\\x1b[31m2") != std::string::npos);

  // A foreign shard's fields quoted in the error line: escaped on stderr.
  two["shard"]["count"] = 3;
  two["tool"]["version"] = "0.1\x1b[2J";
  write_json(shards[1], two);
  const auto bad = run_cli({"merge", shards[0], shards[1]});
  CHECK(bad.code == 3);
  CHECK(bad.err.find('\x1b') == std::string::npos);
  CHECK(bad.err.find("0.1\\x1b[2J") != std::string::npos);
  CHECK(ra::test::count_lines(bad.err) == 1);
}

TEST_CASE("run: a worker killed from outside while loading says so, and by which signal, not a damaged file") {
  TempDir dir;
  ra::test::save_model(dir.file("k.pt"),
                       "\ndef forward(self, x):\n    return ra_test.killed(torch.matmul(x, self.w))\n",
                       {{"w", {4, 3}}});
  const auto r = run_cli({"run", dir.file("k.pt"), "--shape", "1x4", "--configs", "default", "--repeats", "2",
                          "--load-library", ra::test::test_ops_library()});
  CAPTURE(r.err);
  CHECK(r.code == 3);
  CHECK(r.err.find("killed from outside (by SIGKILL") != std::string::npos);
  CHECK(r.err.find("damaged") == std::string::npos);
}
