# SPDX-License-Identifier: Apache-2.0
"""The typed view of a report that the Python API returns. Every field is read from the JSON report
the binary wrote (share/schema/report-v1.schema.json); nothing here computes a digest, a verdict or
an analysis. `summary` is the binary's own human summary (its stdout), as the CLI prints it."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional


@dataclasses.dataclass(frozen=True)
class ConfigVerdict:
    """One configuration's verdict: reproducible/diverged/raised/... for run, invariant/variant/crashed
    for invariance. `classes` (invariance only) groups the batch sizes of identical bits."""
    config: str
    verdict: str
    message: str
    classes: tuple[tuple[int, ...], ...] = ()


@dataclasses.dataclass(frozen=True)
class FirstOp:
    """The first differing op the trace found (run --trace: a root cause; invariance --trace: the
    first op whose anchor-row slice differs), with where it is in the model."""
    config: str
    op: str
    module: str
    source: str
    detail: str  # run: "forward"/"backward"; invariance: "batch of N"


@dataclasses.dataclass(frozen=True)
class Fix:
    """A fix the fix search measured to work: the switches it toggles and the snippet to paste. run:
    `downgrade` when it is reproducible only by computing further from the float64 referee (the
    report's `error_vs_reference.downgrade`; False without a referee); such fixes come after the others."""
    toggles: str
    python: str
    cpp: str
    downgrade: bool = False


@dataclasses.dataclass(frozen=True)
class ReferenceError:
    """run: how far a configuration's result for one floating tensor lies from the float64 referee's
    (the report's `configs[].referee.errors[]`): in the tensor's own dtype's ULP, as max abs and max
    relative error, with float64's own error in that ULP beside it. The figures are NaN where no element
    is finite in both: then the NaN counts, or `note` ("shape differs from the referee's"), say why.
    invariance: one output of a class of batch sizes (`sizes`), its anchor rows at the class's smallest
    size against the referee's rows (the report's `configs[].classes[].errors[]`)."""
    config: str
    tensor: str
    dtype: str
    max_ulp: float
    max_abs: float
    max_rel: float
    referee_own_ulp: float
    nan_result: int
    nan_reference: int
    note: str
    sizes: tuple[int, ...] = ()  # invariance: the class of batch sizes


@dataclasses.dataclass(frozen=True)
class DifferenceClass:
    """run: the class of one difference the report names (reordering, beyond-reordering,
    uninitialized, write-race, unclassified) with its evidence; `between` is the configuration whose
    repeats differed, or "dependence" for a difference between configurations; `tensor` is the
    tensor's name, or "root cause OP" for the trace's first differing op. invariance: `between`
    is the configuration, `sizes` the class of batch sizes whose difference from the reference class
    (batch 1's) it is, `tensor` the output it names."""
    between: str
    tensor: str
    cls: str
    why: str
    sizes: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Result:
    verdict: str          # the report's verdict
    exit_code: int        # the binary's exit code: 0 reproducible/invariant, 1 a finding
    configs: tuple[ConfigVerdict, ...]
    first_op: Optional[FirstOp]
    fixes: tuple[Fix, ...]
    advice: tuple[str, ...]  # invariance: padding, bucketing or switches the report advises
    fix_conclusion: str   # the fix search's conclusion ("" when none ran)
    summary: str          # the binary's human summary (stdout)
    report: dict[str, Any]  # the whole JSON report
    report_path: str
    # run, exec: the first target's configurations in groups, each reproducible with identical results,
    # which differ between groups ((("default",), ("threads-1",)): threads change the bits); () when the
    # configurations agree. The verdict stays "reproducible": the report's "configuration-dependent".
    configuration_dependence: tuple[tuple[str, ...], ...] = ()
    # run and invariance with the float64 referee (the default): each configuration's (invariance: each
    # class's) error per floating tensor, and the class of every difference; () with --referee off, or
    # where the referee did not run (its reason is in the report's "referee" "note"). Named difference_classes, because
    # `classes` is invariance's classes of batch sizes.
    error_vs_reference: tuple[ReferenceError, ...] = ()
    difference_classes: tuple[DifferenceClass, ...] = ()
    kind: str = ""  # the report's kind, one of KINDS (report_kind)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def configuration_dependent(self) -> bool:
        return bool(self.configuration_dependence)

    @property
    def classes(self) -> tuple[tuple[int, ...], ...]:
        """invariance: the first configuration's classes of batch sizes."""
        return self.configs[0].classes if self.configs else ()

    def describe(self) -> str:
        """One line with what the report found, in the CLI's words: each failing configuration with its
        classes, the first differing op and where it is, and the fix (or the advice)."""
        parts = []
        if self.configuration_dependence:
            groups = " | ".join("{" + ",".join(g) + "}" for g in self.configuration_dependence)
            parts.append(f"configuration-dependent: results differ between {groups}")
        for c in self.configs:
            if c.verdict in ("reproducible", "invariant"):
                continue
            text = f"{c.config}: {c.verdict}"
            if len(c.classes) > 1:
                text += f", classes {format_classes(c.classes)}"
            elif c.message:
                text += f" ({c.message})"
            parts.append(text)
        if self.first_op:
            where = f"in {self.first_op.module}" if self.first_op.module else "at the model's top level"
            source = f", {self.first_op.source}" if self.first_op.source else ""
            parts.append(f"first differing op {self.first_op.op} {where} ({self.first_op.detail}{source})")
        if self.fixes:
            parts.append(f"fix: {self.fixes[0].python or self.fixes[0].toggles}")
        elif self.fix_conclusion:
            parts.append(f"fix search: {self.fix_conclusion}")
        elif self.advice:
            parts.append(f"advice: {self.advice[0]}")
        return "; ".join(parts) or f"verdict {self.verdict}"


def format_classes(classes) -> str:
    """{1} | {2,3} | {4…16}: the CLI's notation (reports/invariance_render.cpp), where a…b is a run of
    three or more sizes that are consecutive among the sizes tried."""
    tried = sorted({x for c in classes for x in c})
    parts = []
    for sizes in classes:
        members, items, i = set(sizes), [], 0
        while i < len(tried):
            if tried[i] not in members:
                i += 1
                continue
            j = i
            while j + 1 < len(tried) and tried[j + 1] in members:
                j += 1
            items += [f"{tried[i]}…{tried[j]}"] if j - i >= 2 else [str(x) for x in tried[i:j + 1]]
            i = j + 1
        parts.append("{" + ",".join(items) + "}")
    return " | ".join(parts)


# The kinds a report names in its "kind" key, as reports/model.h's kKinds has them.
KINDS = ("run", "exec", "probes", "invariance", "selftest")


class ReportKindError(ValueError):
    """A report whose "kind" this package does not read (a newer repro-audit's, or a damaged file)."""


def legacy_kind(doc: dict) -> str:
    """The kind of a report written before reports carried "kind", from its keys, as the C++ readers
    guess it (reports/json.cpp, legacy_kind): nothing else guesses."""
    if "selftest" in doc:
        return "selftest"
    if "invariance" in doc:
        return "invariance"
    if "census" in doc:
        return "probes"
    targets = doc.get("targets") or ()
    first = targets[0] if isinstance(targets, list) and targets and isinstance(targets[0], dict) else {}
    return {"probe": "probes", "command": "exec"}.get(first.get("kind"), "run")


def report_kind(doc: dict) -> str:
    """The report's kind: its "kind" key, or legacy_kind for an older file; ReportKindError for a kind
    that is not one of KINDS."""
    kind = doc["kind"] if "kind" in doc else legacy_kind(doc)
    if kind not in KINDS:
        raise ReportKindError(f"report kind {kind!r} is not one this repro_audit reads (it reads {', '.join(KINDS)})")
    return kind


def _classes(cfg) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(c.get("sizes", ())) for c in cfg.get("classes", ()))


def _number(value) -> float:
    return float("nan") if value is None else float(value)


def _referee_parts(target: dict) -> tuple[list[ReferenceError], list[DifferenceClass]]:
    errors, classes = [], []
    for cfg in target.get("configs", ()):
        name = cfg.get("config", "")
        errors += [_reference_error(name, e) for e in (cfg.get("referee") or {}).get("errors", ())]
        for f in cfg.get("diverged_tensors", ()):
            if f.get("referee"):
                classes.append(DifferenceClass(name, f.get("name", ""), f["referee"].get("class", ""),
                                               f["referee"].get("why", "")))
        for rc in (cfg.get("trace") or {}).get("root_causes", ()):
            if rc.get("referee"):  # the trace's first differing op, classed on its own
                classes.append(DifferenceClass(name, f"root cause {rc.get('op', '')}", rc["referee"].get("class", ""),
                                               rc["referee"].get("why", "")))
    for f in (target.get("configuration_dependence") or {}).get("differing_tensors", ()):
        if f.get("referee"):
            classes.append(DifferenceClass("dependence", f.get("name", ""), f["referee"].get("class", ""),
                                           f["referee"].get("why", "")))
    return errors, classes


def _reference_error(config: str, e: dict, sizes: tuple[int, ...] = ()) -> ReferenceError:
    return ReferenceError(config, e.get("name", ""), e.get("dtype", ""), _number(e.get("max_ulp")),
                          _number(e.get("max_abs")), _number(e.get("max_rel")), _number(e.get("referee_own_ulp")),
                          e.get("nan_result", 0), e.get("nan_reference", 0), e.get("note", ""), sizes)


def _invariance_referee_parts(inv: dict) -> tuple[list[ReferenceError], list[DifferenceClass]]:
    """invariance with the float64 referee: each class's errors, and each class's difference from the
    reference class (the tensor its evidence names: the output that decided its class)."""
    errors, classes = [], []
    for cfg in inv.get("configs", ()):
        name = cfg.get("config", "")
        for k in cfg.get("classes", ()):
            sizes = tuple(k.get("sizes", ()))
            errors += [_reference_error(name, e, sizes) for e in k.get("errors", ())]
            d = k.get("difference")
            if d:
                tensor = (d.get("b") or d.get("a") or {}).get("name", "")
                classes.append(DifferenceClass(name, tensor, d.get("class", ""), d.get("why", ""), sizes))
    return errors, classes


def from_report(doc: dict, exit_code: int, summary: str, path: str) -> Result:
    configs, first_op, fixes, advice, conclusion, dependence = [], None, [], [], "", ()
    errors, difference_classes = _referee_parts((doc.get("targets") or [{}])[0])
    kind = report_kind(doc)
    if kind == "invariance":
        inv = doc.get("invariance") or {}
        errors, difference_classes = _invariance_referee_parts(inv)
        for cfg in inv.get("configs", ()):
            configs.append(ConfigVerdict(cfg.get("config", ""), cfg.get("verdict", ""), cfg.get("message", ""),
                                         _classes(cfg)))
            advice += [a for a in cfg.get("advice", ()) if a not in advice]
            t = cfg.get("trace") or {}
            if first_op is None and t.get("outcome") == "found":
                first_op = FirstOp(cfg.get("config", ""), t.get("op", ""), t.get("module", ""), t.get("source", ""),
                                   f"batch of {t.get('size', 0)}")
        conclusion = (inv.get("fix") or {}).get("conclusion", "")
        for cand in (inv.get("fix") or {}).get("candidates", ()):
            if cand.get("fixes"):
                fixes.append(Fix(cand.get("toggles", ""), cand.get("python", ""), cand.get("cpp", "")))
    for target in doc.get("targets", ()) if kind in ("run", "exec", "probes") else ():
        groups = (target.get("configuration_dependence") or {}).get("groups", ())
        dependence = dependence or tuple(tuple(g) for g in groups)
        for cfg in target.get("configs", ()):
            configs.append(ConfigVerdict(cfg.get("config", ""), cfg.get("verdict", ""), cfg.get("message", "")))
            for rc in (cfg.get("trace") or {}).get("root_causes", ()):
                if first_op is None:
                    first_op = FirstOp(cfg.get("config", ""), rc.get("op", ""), rc.get("module", ""),
                                       rc.get("source", ""), rc.get("direction", ""))
            conclusion = conclusion or (cfg.get("fix_search") or {}).get("conclusion", "")
            for cand in (cfg.get("fix_search") or {}).get("candidates", ()):
                if cand.get("minimal") and cand.get("reproducible"):
                    snippet = cand.get("snippet") or {}
                    toggles = ",".join(f"{k}={v}" for k, v in sorted((cand.get("toggles") or {}).items()))
                    fixes.append(Fix(toggles, snippet.get("python", ""), snippet.get("cpp", ""),
                                     bool((cand.get("error_vs_reference") or {}).get("downgrade"))))
    fixes.sort(key=lambda f: f.downgrade)  # stable: the fixes that are no downgrade first
    return Result(doc.get("verdict", ""), exit_code, tuple(configs), first_op, tuple(fixes), tuple(advice), conclusion,
                  summary, doc, path, dependence, tuple(errors), tuple(difference_classes), kind)
