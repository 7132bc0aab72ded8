#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loads the HTML reports that unit_tests and cli_tests wrote into DIR in headless Chromium and
checks each against the JSON report written beside it.

usage: html_chromium.py CHROMIUM DIR STEM...

For each STEM, DIR/STEM.html and DIR/STEM.json must exist. Per page:
  - the page loads with no console message and no uncaught error (Chromium logs both, and every
    request the Content-Security-Policy blocks, as CONSOLE lines on stderr);
  - its script ran to the end (<body data-js="ready">);
  - it fetches nothing: a strict CSP meta tag, and no src/href/... attribute naming another
    document (http:, https:, //, file:, data: outside images);
  - the timing markers appear once each, in order, and bracket <section id="timing">;
  - the DOM after the script ran shows the counts in the JSON: targets (names and verdicts, in
    order), heat-map cells per verdict, target verdict counts, root causes, fix candidates and
    their measured costs, census classes, disagreements, diverged tensors, configuration
    dependence and restart-replay tensors, trial times;
  - it prints to PDF;
  - its sections come in the order of its kind (SECTIONS; an exec report's: EXEC_SECTIONS, the
    checklist before what diverged and the fixes, and no root causes or census, which exec has not);
  - at 1280 px, every <details> opened, the page is no wider than the window and no section hides
    part of its content behind its own scroll bar (a copy of the page with a measuring script).
Fails, never skips, when Chromium is missing: ./dev installs the Debian package chromium.
"""
import collections
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
SECTIONS = ["verdict", "environment", "matrix", "root-causes", "fixes", "census", "details", "timing"]
EXEC_SECTIONS = ["verdict", "checklist", "matrix", "fixes", "details", "environment", "timing"]
SELFTEST_SECTIONS = ["verdict", "environment", "timing"]
WIDTH = 1280
# Opens every <details>, then writes what is wider than its box on <html> for --dump-dom to show.
MEASURE = """<script>(function () {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  var cut = [];
  document.querySelectorAll("section").forEach(function (s) {
    if (s.scrollWidth > s.clientWidth) cut.push(s.id + " " + s.scrollWidth + ">" + s.clientWidth);
  });
  var root = document.documentElement;
  root.setAttribute("data-scroll-width", String(root.scrollWidth));
  root.setAttribute("data-cut", cut.join("; "));
})();</script>"""


def sections_of(report):
    """The section ids a report's page has, in order."""
    if report.get("selftest"):  # a self-test's page holds its own kind's sections only (issue 43, item 5)
        return list(SELFTEST_SECTIONS)
    exec_ = any("exec" in t for t in report.get("targets", []))
    order = list(EXEC_SECTIONS if exec_ else SECTIONS)
    if report.get("baseline"):
        order.insert(order.index("matrix") + 1, "baseline")
    return order
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
URL_ATTRS = {"src", "href", "action", "formaction", "srcset", "poster", "data", "xlink:href", "background", "manifest"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, dict(attrs), parent, [], []

    def classes(self):
        return set((self.attrs.get("class") or "").split())

    def all_text(self):
        return "".join(self.text) + "".join(c.all_text() for c in self.children)


class Dom(html.parser.HTMLParser):
    """The serialised DOM as a tree (Chromium writes every end tag but those of void elements)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", [], None)
        self.current = self.root
        self.nodes = []

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.current)
        self.current.children.append(node)
        self.nodes.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        node = Node(tag, attrs, self.current)
        self.current.children.append(node)
        self.nodes.append(node)

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:
            self.current = node.parent

    def handle_data(self, data):
        self.current.text.append(data)

    def find(self, tag=None, cls=None, **attrs):
        out = []
        for n in self.nodes:
            if tag and n.tag != tag:
                continue
            if cls and cls not in n.classes():
                continue
            if any(n.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            out.append(n)
        return out


class Checker:
    def __init__(self, stem):
        self.stem, self.failures = stem, 0

    def eq(self, what, got, want):
        if got != want:
            print(f"{self.stem}: {what}: page has {got!r}, JSON says {want!r}")
            self.failures += 1

    def true(self, what, ok):
        if not ok:
            print(f"{self.stem}: {what}")
            self.failures += 1


def run_chromium(chromium, args, url, profile):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
           f"--user-data-dir={profile}", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, errors="replace")


def console_lines(stderr):
    return [l for l in stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]


def check_network(c, raw, dom):
    metas = dom.find("meta", http_equiv="Content-Security-Policy")
    c.eq("Content-Security-Policy meta tags", [m.attrs.get("content") for m in metas], [CSP])
    for n in dom.nodes:
        for name, value in n.attrs.items():
            if name not in URL_ATTRS or value is None:
                continue
            v = value.strip().lower()
            external = v.startswith(("http:", "https:", "//", "file:", "ftp:", "ws:", "wss:")) or "://" in v
            if v.startswith("data:") and not (n.tag == "img" and name == "src"):
                external = True
            c.true(f"<{n.tag} {name}=\"{value}\"> names another document", not external)
    c.eq("<script> elements", len(dom.find("script")), 1)
    c.eq("<link> elements", len(dom.find("link")), 0)
    c.true("the script has a src", "src" not in dom.find("script")[0].attrs if dom.find("script") else True)
    c.true("an attribute value in the file begins with http:// or https://",
           not any(f'="{p}' in raw or f"='{p}" in raw for p in ("http://", "https://")))


def check_timing(c, raw):
    begin, end = "\n<!-- timing:begin -->\n", "\n<!-- timing:end -->\n"
    c.eq("timing:begin markers", raw.count("<!-- timing:begin -->"), 1)
    c.eq("timing:end markers", raw.count("<!-- timing:end -->"), 1)
    b, e = raw.find(begin), raw.find(end)
    c.true("timing markers out of order or not on lines of their own", 0 <= b < e)
    if 0 <= b < e:
        inside = raw[b:e]
        c.true("the timing section is not between the markers",
               '<section id="timing">' in inside and inside.rstrip().endswith("</section>"))
        c.true("the timing section is also outside the markers", 'id="timing"' not in raw[:b] + raw[e:])


def check_counts(c, dom, report):
    targets = report["targets"]
    configs = [cfg for t in targets for cfg in t["configs"]]
    body = dom.find("body")
    c.eq("body data-js (the script ran to the end)", body[0].attrs.get("data-js") if body else None, "ready")
    for sid in sections_of(report):
        c.eq(f"<section id={sid}>", len(dom.find("section", id=sid)), 1)
    known = set(SECTIONS + EXEC_SECTIONS + ["baseline"])
    c.eq("section order", [n.attrs.get("id") for n in dom.find("section") if n.attrs.get("id") in known],
         sections_of(report))
    banner = dom.find("section", id="verdict")
    if banner:
        c.eq("banner verdict", banner[0].attrs.get("data-verdict"), report["verdict"])
        c.eq("banner exit code", banner[0].attrs.get("data-exit-code"), str(report["exit_code"]))
        c.eq("banner targets", banner[0].attrs.get("data-targets"), str(len(targets)))
        c.eq("banner cells", banner[0].attrs.get("data-cells"), str(len(configs)))
    rows = dom.find("tr", cls="hm-row")
    c.eq("heat-map rows (target names)", [r.attrs.get("data-target") for r in rows], [t["name"] for t in targets])
    c.eq("heat-map rows (verdicts)", [r.attrs.get("data-verdict") for r in rows], [t["verdict"] for t in targets])
    cells = collections.Counter(n.attrs.get("data-verdict") for n in dom.find("td", cls="hm-cell"))
    c.eq("heat-map cells per verdict", dict(cells), dict(collections.Counter(cfg["verdict"] for cfg in configs)))
    for row, t in zip(rows, targets):
        got = [n.attrs.get("data-config") for n in row.children if "hm-cell" in n.classes()]
        c.eq(f"heat-map cells of {t['name']}", sorted(got), sorted(cfg["config"] for cfg in t["configs"]))
        for n in row.children:
            if "hm-cell" in n.classes():
                c.true(f"heat-map cell {t['name']} / {n.attrs.get('data-config')} has no <title>",
                       any(d.tag == "title" for d in walk(n)))
    counts = {n.attrs.get("data-verdict"): int(n.attrs.get("data-count")) for n in dom.find("li", cls="target-count")}
    c.eq("target counts", counts, dict(collections.Counter(t["verdict"] for t in targets)))
    c.eq("target details", [d.attrs.get("data-verdict") for d in dom.find("details", cls="target")],
         [t["verdict"] for t in targets])
    traced = [cfg["trace"] for cfg in configs if cfg.get("trace")]
    # Then where configuration-dependent targets part (configuration_dependence.causes).
    traced += [cause["trace"] for t in targets for cause in ((t.get("configuration_dependence") or {}).get("causes") or [])
               if cause.get("trace")]
    c.eq("root causes", len(dom.find("tr", cls="root-cause")), sum(len(t["root_causes"]) for t in traced))
    c.eq("root-cause ops", [n.attrs.get("data-op") for n in dom.find("tr", cls="root-cause")],
         [rc["op"] for t in traced for rc in t["root_causes"]])
    c.eq("structural splits", len(dom.find("tr", cls="split")), sum(len(t["splits"]) for t in traced))
    searches = [cfg["fix_search"] for cfg in configs if cfg.get("fix_search")]
    candidates = [cand for f in searches for cand in f["candidates"]]
    rows = dom.find("tr", cls="fix-candidate")
    c.eq("fix candidates", len(rows), len(candidates))
    c.eq("fix candidate verdicts", [r.attrs.get("data-verdict") for r in rows], [x["verdict"] for x in candidates])
    c.eq("minimal fixes", [r.attrs.get("data-minimal") for r in rows], [str(x["minimal"]).lower() for x in candidates])
    c.eq("snippets of minimal fixes", len(dom.find("div", cls="snippet")), sum(1 for x in candidates if x["minimal"]))
    c.eq("no-deterministic-implementation ops", len(dom.find("div", cls="no-deterministic")),
         sum(len(f["no_deterministic_implementation"]) for f in searches))
    costs = [x for f in report["timing"]["fixes"] for x in f["candidates"] if x["cost_ratio"] is not None]
    filled = [n.all_text() for n in dom.find("td", cls="cost") if n.all_text()]
    c.eq("fix costs copied into the fix tables", sorted(filled), sorted(f"{x['cost_ratio']:.2f}\u00d7" for x in costs))
    census = report.get("census")
    got = {n.attrs.get("data-class"): int(n.attrs.get("data-count")) for n in dom.find("td", cls="census-class")}
    want = {k: len(census[k]) for k in ("alerted_diverged", "alerted_stable", "silent_diverged", "stable", "not_run")} \
        if census else {}
    c.eq("census classes", got, want)
    probes = [t["probe"] for t in targets if "probe" in t]
    c.eq("disagreements", len(dom.find("li", cls="disagreement")), sum(len(p["disagreements"]) for p in probes))
    c.eq("probe facts", len(dom.find("tr", cls="probe-fact")), len(probes))
    c.eq("diverged tensors", len(dom.find("tr", cls="diverged-tensor")), sum(len(cfg["diverged_tensors"]) for cfg in configs))
    c.eq("configuration-dependence tensors", len(dom.find("tr", cls="dependence-tensor")),
         sum(len(t["configuration_dependence"]["differing_tensors"]) for t in targets if t["configuration_dependence"]))
    c.eq("restart-replay tensors", len(dom.find("tr", cls="replay-tensor")),
         sum(len(t["replay"]["differing_tensors"]) for t in targets if "replay" in t))
    c.eq("failed trials", len(dom.find("div", cls="trial-failure")),
         sum(1 for cfg in configs for trial in cfg["trials"] if trial["status"] != "ok"))
    c.eq("trial times", len(dom.find("tr", cls="trial-time")), len(report["timing"]["trials"]))
    # Costs are measured only for searches that found a fix; the others say nothing was timed.
    priced = [f for f in searches if any(x["minimal"] for x in f["candidates"])]
    c.eq("fix costs", len(dom.find("tr", cls="fix-cost")), sum(len(f["candidates"]) for f in priced))
    c.eq("fix searches without costs", len(dom.find("p", cls="fix-untimed")), len(searches) - len(priced))


def walk(node):
    for child in node.children:
        yield child
        yield from walk(child)


def check_baseline(c, dom, report):
    """The baseline section: present exactly when the report has one; its environment changes and
    listed results (with their statuses, in order) as in the JSON."""
    b = report.get("baseline")
    c.eq("<section id=baseline>", len(dom.find("section", id="baseline")), 1 if b else 0)
    if not b:
        return
    c.eq("environment changes", len(dom.find("tr", cls="env-change")) - len(b["ignored_changes"]), len(b["environment_changes"]))
    rows = [(n.attrs.get("data-status")) for n in dom.find("tr", cls="baseline-result")]
    statuses = [r["status"] for r in b["results"]]
    if len(statuses) <= 12:
        c.eq("baseline results", rows, statuses)
    else:
        c.true("baseline results listed are a subset", set(rows) <= set(statuses))
    failing = {"regression"} | ({"nondeterministic"} if report["exit_code"] == 1 else set())
    c.eq("baseline results marked as failing",
         len([n for n in dom.find("tr", cls="baseline-result") if n.attrs.get("data-fails") == "true"]) > 0,
         any(s in failing for s in rows) and report["exit_code"] == 1)


def check_selftest(c, dom, report):
    """A self-test's checks: one row each, in order, passed or not as in the JSON."""
    checks = report.get("selftest", {}).get("checks", [])
    rows = [n for n in dom.nodes if "data-check" in n.attrs]
    c.eq("self-test checks", [(n.attrs.get("data-check"), n.attrs.get("data-passed")) for n in rows],
         [(k["name"], str(k["passed"]).lower()) for k in checks])


def check_layout(c, chromium, raw, profile, tmp, stem):
    """At WIDTH px: the page no wider than the window, no section cut off behind its scroll bar."""
    copy = os.path.join(tmp, stem + ".measure.html")
    with open(copy, "w", encoding="utf-8") as f:
        f.write(raw.replace("</body>", MEASURE + "\n</body>", 1))
    r = run_chromium(chromium, [f"--window-size={WIDTH},900", "--dump-dom"], "file://" + copy, profile)
    dom = Dom()
    dom.feed(r.stdout)
    dom.close()
    root = dom.find("html")
    attrs = root[0].attrs if root else {}
    width = attrs.get("data-scroll-width")
    c.true(f"layout: no measurement at {WIDTH} px (the measuring script did not run)", width is not None)
    if width is not None:
        c.true(f"layout: the page is {width} px wide at a {WIDTH} px window", int(width) <= WIDTH)
        c.eq(f"layout: sections wider than their box at {WIDTH} px", attrs.get("data-cut"), "")


def check_page(chromium, folder, stem, profile, pdf_dir):
    c = Checker(stem)
    html_path, json_path = os.path.join(folder, stem + ".html"), os.path.join(folder, stem + ".json")
    for path in (html_path, json_path):
        if not os.path.exists(path):
            print(f"missing {path}: the test that writes it did not run or failed")
            return 1
    with open(json_path, encoding="utf-8") as f:
        report = json.load(f)
    with open(html_path, encoding="utf-8") as f:
        raw = f.read()
    url = "file://" + os.path.abspath(html_path)
    r = run_chromium(chromium, ["--dump-dom"], url, profile)
    c.eq("chromium --dump-dom exit status", r.returncode, 0)
    for line in console_lines(r.stderr):
        c.true(f"console: {line}", False)
    dom = Dom()
    dom.feed(r.stdout)
    dom.close()
    check_network(c, raw, dom)
    check_timing(c, raw)
    check_counts(c, dom, report)
    check_baseline(c, dom, report)
    check_selftest(c, dom, report)
    check_layout(c, chromium, raw, profile, pdf_dir, stem)
    pdf = os.path.join(pdf_dir, stem + ".pdf")
    p = run_chromium(chromium, ["--no-pdf-header-footer", f"--print-to-pdf={pdf}"], url, profile)
    c.eq("chromium --print-to-pdf exit status", p.returncode, 0)
    for line in console_lines(p.stderr):
        c.true(f"console while printing: {line}", False)
    c.true("no PDF printed", os.path.exists(pdf) and os.path.getsize(pdf) > 1000)
    print(f"{stem}: {'ok' if c.failures == 0 else f'{c.failures} failures'}")
    return c.failures


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    chromium, folder, stems = argv[1], argv[2], argv[3:]
    found = shutil.which(chromium)
    if not found:
        sys.exit(f"html_chromium.py: '{chromium}' not found: the HTML reports need headless Chromium to be checked "
                 "(Debian package chromium; ./dev test installs it)")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="ra-chromium-") as tmp:
        for stem in stems:
            profile = tempfile.mkdtemp(dir=tmp)
            try:
                failures += check_page(found, folder, stem, profile, tmp)
            except subprocess.TimeoutExpired:
                print(f"{stem}: chromium did not finish within 120 s")
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
