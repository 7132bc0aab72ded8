// SPDX-License-Identifier: Apache-2.0
// exec's reports in every format (issue 33): one figure for what a run is compared by, the same
// for a reproducible configuration and a diverged one whose checkpoint was read entry by entry; and
// exec's own words and order (verdict, checklist, what diverged, fixes, details, environment). It
// also writes the page and its JSON into RA_REPORT_DIR, where html_chromium checks its layout at
// 1280 px. The names and sizes are those of a real run (tests/exec/test_exec_report.py runs one).
#include "reports/json_read.h"
#include "reports/render.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using ra::report::Verdict;

ra::report::ConfigResult exec_config(const char* name, Verdict v, const std::vector<std::string>& reference) {
  ra::report::ConfigResult c;
  c.name = name;
  c.verdict = v;
  c.repeats = c.completed = 3;
  for (const auto& n : reference) c.reference.push_back({n, "float32", {16, 8}, std::string(32, 'a')});
  c.tensor_count = c.reference.size();
  c.compared = ra::report::ExecCompared{1, 1};
  ra::report::Trial trial;
  trial.wall_ms = 900;
  c.trials = {trial};
  return c;
}

// `exec --artifact '{out}/ckpt.pt' --metric loss=... -- python train.py`: default diverged (the
// script never seeds torch; ckpt.pt read entry by entry), threads-1 reproducible.
ra::report::Report exec_report() {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "exec", "--artifact", "{out}/ckpt.pt", "--", "python", "train.py"};
  ra::report::Target t;
  t.name = "python train.py";
  t.device = "cpu";
  ra::report::ExecFacts e;
  e.command = {"python", "train.py"};
  e.executable = "/usr/bin/python";
  e.working_directory = "/home/user/project";
  e.artifacts = {{"ckpt.pt", "{out}/ckpt.pt", "torch.save", "", 7379}};
  e.metrics = {{"loss", "loss ([0-9.]+)", 3}};
  e.hook = "python";
  const std::string where = "/home/user/projects/a-rather-long-folder-name/experiments/2026/train_with_a_long_name.py";
  e.checklist = {
      {"seed.torch",
       "missing",
       "torch's global RNG was drawn from but never seeded (torch.manual_seed was not called)",
       "",
       {},
       "ckpt.pt"},
      {"seed.python", "not-applicable", "Python's random module was never drawn from in this process", "", {}, ""},
      {"switches",
       "ok",
       "at the first convolution or matmul (torch.nn.functional.linear): cudnn.benchmark=off, "
       "cudnn.deterministic=off, cudnn.enabled=on, deterministic=off, tf32.cublas=off, tf32.cudnn=on; none changed "
       "after the model was built",
       where + ":8",
       {},
       ""}};
  std::vector<std::string> entries;
  for (const char* n : {"model/0.bias", "model/0.weight", "model/2.bias", "model/2.weight"})
    entries.push_back(std::string("ckpt.pt:") + n);
  for (int p = 0; p < 4; ++p)
    for (const char* s : {"exp_avg", "exp_avg_sq"})
      entries.push_back(fmt::format("ckpt.pt:optimizer/state/{}/{}", p, s));
  std::vector<std::string> reference = entries;
  reference.insert(reference.begin() + 4, "ckpt.pt:optimizer/param_groups");
  reference.push_back("metric:loss");
  auto diverged = exec_config("default", Verdict::Diverged, reference);
  diverged.diverging_repeats = 2;
  diverged.divergence_rate = 1;
  diverged.rate_ci_low = 0.34;
  diverged.rate_ci_high = 1;
  diverged.distinct_outcomes = 3;
  entries.push_back("metric:loss");
  for (const auto& n : entries) {
    ra::report::TensorFinding f;
    f.name = n;
    f.dtype = "float32";
    f.shape = {16, 8};
    f.diverging_trials = 2;
    ra::report::DivergenceStats s;
    s.numel = s.differing = 128;
    s.first_index_nd = {0, 0};
    s.max_abs_diff = 0.657;
    s.max_rel_diff = 2;
    s.max_ulp = 7.12455e+07;
    s.sign_differs = 66;
    s.tolerance = {1e-5, 1.3e-6};
    s.beyond_tolerance = 128;
    f.stats = s;
    diverged.diverged_tensors.push_back(f);
  }
  ra::report::FixSearch fix;
  fix.from = "default";
  fix.repeats = 3;
  fix.timed_runs = 5;
  ra::report::FixCandidate det;
  det.toggles = {{"deterministic", "on"}};
  det.config = "default+deterministic=on";
  det.stage = "single";
  det.verdict = Verdict::Diverged;
  fix.candidates = {det};
  fix.conclusion = "no candidate made it reproducible";
  diverged.fix_search = fix;
  t.configs = {diverged, exec_config("threads-1", Verdict::Reproducible, {"ckpt.pt", "metric:loss"})};
  r.body = ra::report::ExecBody{{{t, e}}};
  r.wall_ms = 5000;
  ra::report::finalize(r);
  return r;
}

size_t where_in(const std::string& s, const std::string& what) {
  const size_t i = s.find(what);
  CAPTURE(what);
  CHECK(i != std::string::npos);
  return i;
}

}  // namespace

TEST_CASE("exec reports: what a run is compared by is one figure, the same diverged or not, in every format") {
  const auto r = exec_report();
  const std::string text = ra::report::render_text(r);
  CAPTURE(text);
  CHECK(text.find("compared per run") != std::string::npos);
  CHECK(text.find("  default                  diverged           3/3       2/2  1 file, 1 metric\n") !=
        std::string::npos);
  CHECK(text.find("  threads-1                reproducible       3/3       0/2  1 file, 1 metric\n") !=
        std::string::npos);
  CHECK(text.find("13 entries differ") != std::string::npos);
  CHECK(text.find("tensors") == std::string::npos);

  const std::string md = ra::report::render_markdown(r);
  CHECK(md.find("| compared per run |") != std::string::npos);
  CHECK(md.find("| default | **diverged** | 2/2 (1.00) | 1 file, 1 metric |") != std::string::npos);
  CHECK(md.find("| threads-1 | reproducible | 0/2 (0.00) | 1 file, 1 metric |") != std::string::npos);
  CHECK(md.find("- diverged entries: ") != std::string::npos);

  const std::string junit = ra::report::render_junit(r);
  CHECK(junit.find("<property name=\"compared per run: default\" value=\"1 file, 1 metric\"/>") != std::string::npos);
  CHECK(junit.find("<property name=\"compared per run: threads-1\" value=\"1 file, 1 metric\"/>") != std::string::npos);
  CHECK(junit.find("13 entries differ") != std::string::npos);

  const std::string html = ra::report::render_html(r);
  size_t shown = 0;
  for (size_t i = html.find("compared per run: 1 file, 1 metric"); i != std::string::npos;
       i = html.find("compared per run: 1 file, 1 metric", i + 1))
    ++shown;
  CHECK(shown == 2);
  CHECK(html.find("tensors digested per run") == std::string::npos);

  // JSON: the figure beside tensor_count (the digests, 14 and 2), read back; a report written
  // before it was recorded gets it counted from its digests, the same.
  auto j = nlohmann::ordered_json::parse(ra::report::render_json(r));
  for (const auto& c : j["targets"][0]["configs"]) {
    CHECK(c["compared"] == nlohmann::ordered_json({{"files", 1}, {"metrics", 1}}));
  }
  CHECK(j["targets"][0]["configs"][0]["tensor_count"] == 14);
  const auto back = ra::report::report_from_json(j);
  CHECK(back.targets()[0].configs[0].compared->files == 1);
  for (auto& c : j["targets"][0]["configs"]) c.erase("compared");
  const auto old = ra::report::report_from_json(j);
  for (const auto& c : old.targets()[0].configs) {
    REQUIRE(c.compared.has_value());
    CHECK(c.compared->files == 1);
    CHECK(c.compared->metrics == 1);
  }
}

TEST_CASE("exec reports: exec's own words, the checklist before what diverged and the fixes") {
  const auto r = exec_report();
  const std::string html = ra::report::render_html(r);
  size_t last = 0;
  for (const char* id : {"verdict", "checklist", "matrix", "fixes", "details", "environment", "timing"}) {
    const size_t i = where_in(html, std::string("<section id=\"") + id + "\"");
    CHECK(i > last);
    last = i;
  }
  CHECK(html.find("<section id=\"root-causes\"") == std::string::npos);
  CHECK(html.find("<section id=\"census\"") == std::string::npos);
  CHECK(html.find("traced") == std::string::npos);
  CHECK(html.find("run --trace") == std::string::npos);
  CHECK(html.find("Root causes") == std::string::npos);
  CHECK(html.find("root causes fixed") == std::string::npos);
  CHECK(html.find("3 runs of the command per candidate") != std::string::npos);
  CHECK(where_in(html, "<table class=\"checklist\"") < where_in(html, "class=\"tensor diverged-tensor\""));
  CHECK(where_in(html, "<nav>") < where_in(html, "<a href=\"#checklist\">Checklist</a><a href=\"#matrix\">"));
  std::filesystem::create_directories(RA_REPORT_DIR);
  const std::string base = std::string(RA_REPORT_DIR) + "/unit-exec";
  std::ofstream(base + ".json", std::ios::binary) << ra::report::render_json(r);
  std::ofstream(base + ".html", std::ios::binary) << html;

  const std::string text = ra::report::render_text(r);
  CAPTURE(text);
  CHECK(where_in(text, "seeding checklist") < where_in(text, "  configuration "));
  CHECK(where_in(text, "seeding checklist") < where_in(text, "fix search from default"));
  CHECK(text.find("traced") == std::string::npos);

  const std::string md = ra::report::render_markdown(r);
  CHECK(where_in(md, "seeding checklist") < where_in(md, "- diverged entries: "));
  CHECK(where_in(md, "seeding checklist") < where_in(md, "no candidate made it reproducible"));
}
