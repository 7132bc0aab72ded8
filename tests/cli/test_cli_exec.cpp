// SPDX-License-Identifier: Apache-2.0
// `exec` as a newcomer meets it (issue 33), through the binary, with the venv's Python playing the
// user's program: the README's first exec for a script that saves its checkpoint into
// $REPRO_AUDIT_OUT or into its working directory (item 1), and crashes said in the text summary:
// a repeat killed inside a diverged configuration, a fix candidate that crashed (item 5). Kills
// are deterministic: the program kills itself with SIGKILL on a chosen run, counted in a file of
// the test's own folder.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <ATen/ATen.h>

#include <doctest/doctest.h>

#include <fstream>

#include <unistd.h>

namespace {

using ra::test::CliResult;
using ra::test::run_cli;
using ra::test::TempDir;

// A seeded training step of the README/GUIDE kind, printing its loss, saving a checkpoint to `where`.
std::string train_script(const std::string& where) {
  return "import os\nimport torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(8, 2)\n"
         "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nx, y = torch.randn(32, 8), torch.randn(32, 2)\n"
         "for step in range(3):\n    opt.zero_grad()\n    loss = torch.nn.functional.mse_loss(model(x), y)\n"
         "    loss.backward()\n    opt.step()\n    print(f\"loss {loss.item():.6f}\")\n"
         "torch.save({\"model\": model.state_dict(), \"step\": 3}, " +
         where + ")\n";
}
const char* kIntoOut = R"(os.path.join(os.environ["REPRO_AUDIT_OUT"], "ckpt.pt"))";
const char* kIntoCwd = R"("ckpt.pt")";

// Writes its run's number into {out}/out.txt (so runs differ), counting runs in argv[1]/count; kills
// itself with SIGKILL in run argv[2], or in every run where PYTHONHASHSEED is argv[3].
const char* kKilledScript = R"(import os, signal, sys
counter = os.path.join(sys.argv[1], "count")
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(n))
if n == int(sys.argv[2]) or os.environ.get("PYTHONHASHSEED") == sys.argv[3]:
    os.kill(os.getpid(), signal.SIGKILL)
open(os.path.join(os.environ["REPRO_AUDIT_OUT"], "out.txt"), "w").write(f"run {n}\n")
)";

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Runs the binary in `dir` as its working directory, as a user runs exec in their project.
CliResult run_in(const TempDir& dir, const std::vector<std::string>& args) {
  char* before = ::getcwd(nullptr, 0);
  REQUIRE(::chdir(dir.file("").c_str()) == 0);
  CliResult r = run_cli(args);
  CHECK(::chdir(before) == 0);
  std::free(before);
  return r;
}

}  // namespace

TEST_CASE(
    "exec: the README's --artifact ckpt.pt takes a checkpoint saved into $REPRO_AUDIT_OUT or the working directory") {
  for (const char* where : {kIntoOut, kIntoCwd}) {
    CAPTURE(where);
    TempDir dir;
    write(dir.file("train.py"), train_script(where));
    const auto r = run_in(dir, {"exec", "--repeats", "2", "--artifact", "ckpt.pt", "--metric", "loss=loss ([0-9.]+)",
                                "--report", dir.file("r.json"), "--quiet", "--", RA_TORCH_PYTHON, "train.py"});
    CAPTURE(r.err);
    CHECK(r.code == 0);
    REQUIRE(ra::test::file_exists(dir.file("r.json")));
    const auto target = ra::test::read_json(dir.file("r.json"))["targets"][0];
    CHECK(target["configs"][0]["verdict"] == "reproducible");
    REQUIRE(target["exec"]["artifacts"].size() == 1);
    CHECK(target["exec"]["artifacts"][0]["name"] == "ckpt.pt");
    CHECK(target["exec"]["artifacts"][0]["kind"] == "torch.save");
    CHECK(!ra::test::file_exists(dir.file("ckpt.pt")));  // taken after each run, as from {out}
  }
}

TEST_CASE("exec: an --artifact that matches nothing says what the command wrote, where, and what would take it") {
  TempDir dir;
  write(dir.file("into_out.py"), train_script(kIntoOut));
  write(dir.file("into_cwd.py"), train_script(kIntoCwd));
  const auto wrong = [&](const std::string& script, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"exec", "--repeats", "1", "--report", dir.file("r.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const auto& a : {std::string("--"), std::string(RA_TORCH_PYTHON), script}) args.push_back(a);
    const auto r = run_in(dir, args);
    CAPTURE(r.err);
    CHECK(r.code == 3);
    CHECK(ra::test::count_lines(r.err) == 1);
    CHECK(r.out.empty());
    CHECK(!ra::test::file_exists(dir.file("r.json")));
    return r.err;
  };
  const std::string out = wrong("into_out.py", {"--artifact", "model.pt"});
  CHECK(out.find("--artifact 'model.pt' matched no file in any run") != std::string::npos);
  CHECK(out.find("wrote into $REPRO_AUDIT_OUT: ckpt.pt;") != std::string::npos);
  CHECK(out.find("--artifact '{out}/ckpt.pt' takes it, or omit --artifact") != std::string::npos);

  const std::string cwd = wrong("into_cwd.py", {"--artifact", "model.pt"});
  CHECK(cwd.find("$REPRO_AUDIT_OUT: nothing; into the working directory: ckpt.pt") != std::string::npos);
  CHECK(cwd.find("--artifact 'ckpt.pt' takes it") != std::string::npos);
  REQUIRE(::unlink(dir.file("ckpt.pt").c_str()) == 0);

  // Without --artifact, only $REPRO_AUDIT_OUT is compared: a file saved where the script runs is named.
  const std::string none = wrong("into_cwd.py");
  CHECK(none.find("the command wrote no artifact in any run") != std::string::npos);
  CHECK(none.find("it wrote into the working directory: ckpt.pt (--artifact 'ckpt.pt' takes it)") != std::string::npos);
}

TEST_CASE("exec: a repeat killed inside a diverged configuration is named in the text summary, with its signal") {
  TempDir dir;
  write(dir.file("killed.py"), kKilledScript);
  const auto r = run_in(dir, {"exec", "--repeats", "3", "--no-fix-search", "--report", dir.file("r.json"), "--quiet",
                              "--", RA_TORCH_PYTHON, "killed.py", dir.file(""), "2", "none"});
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("default                  diverged           2/3") != std::string::npos);
  // Run 2 is repeat 1 (repeats count from 0, as everywhere in the report).
  CHECK(r.out.find("    1 of 3 repeats did not complete: repeat 1 killed from outside (by SIGKILL, signal 9: ") !=
        std::string::npos);
  CHECK(r.out.find("damaged") == std::string::npos);
  CHECK(r.out.find("loader") == std::string::npos);
  const auto trials = ra::test::read_json(dir.file("r.json"))["targets"][0]["configs"][0]["trials"];
  CHECK(trials[1]["status"] == "crashed");
  CHECK(trials[1]["signal"] == 9);
}

TEST_CASE("exec: a fix candidate that crashed says how in its line, and the conclusion names it") {
  TempDir dir;
  write(dir.file("killed.py"), kKilledScript);
  // Runs differ (nothing seeds them, nothing draws from an RNG: the search runs); PYTHONHASHSEED=0 kills it.
  const auto r = run_in(dir, {"exec", "--repeats", "2", "--timed-runs", "5", "--report", dir.file("r.json"), "--quiet",
                              "--", RA_TORCH_PYTHON, "killed.py", dir.file(""), "0", "0"});
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.code == 1);
  const std::string killed = "killed from outside (by SIGKILL, signal 9: ";
  CHECK(r.out.find("      pythonhashseed=0                         crashed       (repeat 0: " + killed) !=
        std::string::npos);
  const size_t conclusion = r.out.find("    => ");
  REQUIRE(conclusion != std::string::npos);
  const std::string line = r.out.substr(conclusion, r.out.find('\n', conclusion) - conclusion);
  CHECK(line.find("; pythonhashseed=0 crashed, so whether it fixes it is unknown (repeat 0: " + killed) !=
        std::string::npos);
  const auto fix = ra::test::read_json(dir.file("r.json"))["targets"][0]["configs"][0]["fix_search"];
  CHECK(fix["conclusion"].get<std::string>().find("pythonhashseed=0 crashed") != std::string::npos);
}
