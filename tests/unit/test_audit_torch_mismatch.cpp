// SPDX-License-Identifier: Apache-2.0
// A worker run with another torch's libraries than it was built against (issue 40): the worker's
// own check names both releases, and the front turns that, or a worker the dynamic loader could not
// start, into one input error (exit 3), never a symbol-lookup error passed on as a crash.
#include "audit/common/errors.h"
#include "audit/trial/runner.h"
#include "audit/trial/worker_client.h"
#include "worker/runtime/fingerprint.h"

#include <doctest/doctest.h>

#include <string>

namespace {

ra::ChildOutcome exited(int code, const std::string& log) {
  ra::ChildOutcome out;
  out.kind = ra::ChildOutcome::Kind::Exited;
  out.exit_code = code;
  out.log_tail = log;
  return out;
}

std::string input_error(const ra::ChildOutcome& out) {
  try {
    ra::check_worker_loaded(out);
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("torch_version_mismatch: the release of the loaded libraries against the one built against") {
  const std::string py = "__version__ = '2.15.0+cu132'\ndebug = False\ngit_version = 'd0f2af8b66b2'\n";
  CHECK(ra::torch_version_mismatch("2.15.0", py, "/venv/torch/lib").empty());
  const std::string line = ra::torch_version_mismatch("2.11.0", py, "/venv/torch/lib");
  CHECK(line.find("built against torch 2.11.0 but loaded torch 2.15.0 from /venv/torch/lib") != std::string::npos);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(ra::torch_version_mismatch("2.11.0", "no version here", "/x").empty());  // a LibTorch archive
}

TEST_CASE("torch_library_mismatch: this build's own torch matches") { CHECK(ra::torch_library_mismatch().empty()); }

TEST_CASE("check_worker_loaded: the loader's failure and the worker's own check are one input error") {
  const std::string loader = input_error(
      exited(127,
             "repro-audit-worker: error while loading shared libraries: libtorch_cpu.so: cannot open shared object "
             "file: No such file or directory"));
  CHECK(loader.find("cannot load the torch it was built against") != std::string::npos);
  CHECK(loader.find("libtorch_cpu.so: cannot open shared object file") != std::string::npos);
  CHECK(input_error(exited(127, "repro-audit-worker: symbol lookup error: undefined symbol: _ZN3c10"))
            .find("cannot load the torch it was built against") != std::string::npos);
  CHECK(input_error(exited(3,
                           "repro-audit: repro-audit was built against torch 2.11.0 but loaded torch 2.15.0 "
                           "from /v/torch/lib (...)"))
            .rfind("repro-audit was built against torch 2.11.0", 0) == 0);
  // Anything else is left to the caller: a model's own input error, a crash, a plain exit 127.
  CHECK(input_error(exited(3, "repro-audit: model 'm.pt' is not a TorchScript archive")).empty());
  CHECK(input_error(exited(127, "sh: 1: python: not found")).empty());
  CHECK(input_error(exited(0, "")).empty());
}

TEST_CASE("check_worker_loaded: a library other than torch's that the loader cannot use leaves the audit incomplete") {
  // LD_LIBRARY_PATH naming a libspdlog without spdlog's symbols; the loader's warnings come first.
  const std::string tail =
      "w: ./libspdlog.so.1.10: no version information available (required by w)\n"
      "w: symbol lookup error: w: undefined symbol: _ZN6spdlog7details7registry8instanceEv";
  CHECK(ra::loader_failure(127, tail) ==
        "w: symbol lookup error: w: undefined symbol: _ZN6spdlog7details7registry8instanceEv");
  CHECK(ra::loader_failure(1, tail).empty());  // not the loader's exit
  CHECK(ra::loader_failure(127, "w: ./libspdlog.so.1.10: no version information available (required by w)").empty());
  CHECK(ra::loader_failure(127,
                           "w: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found "
                           "(required by w)")
            .find("GLIBCXX_3.4.32") != std::string::npos);
  for (const std::string& line :
       {std::string("w: symbol lookup error: w: undefined symbol: _ZN6spdlog7details7registry8instanceEv"),
        std::string("w: error while loading shared libraries: libspdlog.so.1.10: cannot open shared object file"),
        std::string("w: relocation error: w: symbol _ZTVN10__cxxabiv117__class_type_infoE, version CXXABI_1.3 not "
                    "defined in file libstdc++.so.6 with link time reference")}) {
    CAPTURE(line);
    std::string what;
    int code = 0;
    try {
      ra::check_worker_loaded(exited(127, line));
    } catch (const ra::Error& e) {
      what = e.what();
      code = static_cast<int>(e.code());
    }
    CHECK(code == static_cast<int>(ra::ExitCode::Incomplete));
    CHECK(what.rfind("the worker could not start: the dynamic loader failed (" + line + ")", 0) == 0);
    CHECK(what.find("LD_LIBRARY_PATH") != std::string::npos);
  }
}
