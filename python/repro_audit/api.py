# SPDX-License-Identifier: Apache-2.0
"""run, invariance and exec from Python, on a model that exists only as an object.

The package prepares files and reads reports; the binary does all the work. A model is saved to a
temporary folder as a torch.export archive of its eval-mode forward with a dynamic batch dimension
(what the worker runs by its own runtime), or as TorchScript (torch.jit.script, else torch.jit.trace)
where export fails and for mode="train", where the worker calls module.train() (an export archive
trains too, but in the mode it was exported in). Inputs go through torch.save. The
binary runs with --report into that folder; its JSON report becomes a Result (results.py). Exit
codes 0 and 1 are answers (a Result); any other is a ReproAuditError with the binary's one-line
message. torch is imported only here, when a model must be saved."""
from __future__ import annotations

import collections.abc
import errno
import json
import operator
import pathlib
import subprocess
import tempfile
from typing import Any, Iterable, Optional, Sequence, Union

from ._binary import ReproAuditError, front
from .results import Result, from_report

Sizes = Union[str, Iterable[int], None]


def _as_args(inputs) -> tuple:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def _check_model(model, function: str) -> None:
    """TypeError unless `model` is a torch.nn.Module (a ScriptModule is one): what the binary audits
    is a saved module, and a string, None or a plain function cannot be saved as one."""
    import torch

    if not isinstance(model, torch.nn.Module):
        saved = f"; to audit a saved file, run `repro-audit {function} FILE`" if function != "save_model" else ""
        raise TypeError(f"repro_audit.{function}() takes a torch.nn.Module (or a torch.jit.ScriptModule) as its model, "
                        f"not {type(model).__name__}{saved}")


def _sizes_text(sizes: Sizes) -> str:
    """--sizes as the binary takes it: a string as it is; integers sorted, each run of three or more
    consecutive ones written A..B, so range(1, 10**6 + 1) is "1..1000000", not a 7 MB argument."""
    if isinstance(sizes, str):
        return sizes
    if isinstance(sizes, (bytes, bytearray)) or not isinstance(sizes, collections.abc.Iterable):
        raise TypeError(f"sizes takes integers (a list or a range) or a string as --sizes takes it, not "
                        f"{type(sizes).__name__}")
    try:
        values = sorted({operator.index(s) for s in sizes})
    except TypeError:
        raise TypeError("sizes takes whole numbers: batch sizes such as [1, 2, 4, 8] or range(1, 17)") from None
    items, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[i - 1] + 1:
            run = values[start:i]
            items += [f"{run[0]}..{run[-1]}"] if len(run) > 2 else [str(v) for v in run]
            start = i
    return ",".join(items)


def save_model(model, example, path: pathlib.Path, *, train: bool = False, dynamic_batch: bool = True) -> str:
    """Saves `model` for the worker: a torch.export archive (batch dimension 0 dynamic) in eval mode,
    else TorchScript. Returns the format written: "export" or "torchscript". The model's training
    flag is restored afterwards."""
    import torch

    _check_model(model, "save_model")
    if isinstance(model, torch.jit.ScriptModule):
        model.save(str(path))
        return "torchscript"
    # Aliases of the user's tensors: torch.export records a dynamic dimension as an attribute of the
    # tensors it traced, which would then pickle as a subclass in the user's own torch.save.
    args = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in _as_args(example))
    was_training = model.training
    model.train(train)
    try:
        if not train:
            dims = tuple({0: torch.export.Dim.DYNAMIC} if isinstance(a, torch.Tensor) and a.dim() > 0 else None
                         for a in args) if dynamic_batch else None
            try:
                torch.export.save(torch.export.export(model, args, dynamic_shapes=dims), str(path))
                return "export"
            except Exception:  # not exportable (data-dependent control flow, ...): TorchScript below
                pass
        try:
            scripted = torch.jit.script(model)
        except Exception:
            scripted = torch.jit.trace(model, args, check_trace=False)
        scripted.save(str(path))
        return "torchscript"
    finally:
        model.train(was_training)


def _options(configs, repeats, trace, device, extra) -> list[str]:
    out = []
    if configs:
        out += ["--configs", configs if isinstance(configs, str) else ",".join(configs)]
    if repeats is not None:
        out += ["--repeats", str(repeats)]
    if trace:
        out.append("--trace")
    if device:
        out += ["--device", device]
    return out + [str(x) for x in extra]


def _reports(junit, markdown, html) -> list[str]:
    out = []
    for flag, path in (("--junit", junit), ("--markdown", markdown), ("--html", html)):
        if path:
            out += [flag, str(path)]
    return out


def _run_binary(argv: Sequence[str], folder: pathlib.Path, report: Optional[str], tail: Sequence[str] = ()) -> Result:
    """Runs the front with `argv` (a command and its options), --report (the user's path, else one in
    `folder`) and `tail` (exec's "-- COMMAND"), and reads the report it wrote."""
    out = pathlib.Path(report) if report else folder / "report.json"
    cmd = [front(), "-q", *argv, "--report", str(out), *tail]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        if e.errno == errno.E2BIG:  # the arguments, not the binary: say which
            words = [str(a) for a in cmd]  # exec's command may hold paths
            longest = max(words, key=len)
            raise ReproAuditError(f"the command line is too long for this system ({sum(len(a) + 1 for a in words)} "
                                  f"bytes, the longest argument {len(longest)}: {longest[:60]!r}...): give fewer or "
                                  f"shorter values", 2) from None
        raise ReproAuditError(f"cannot start {cmd[0]}: {e.strerror}", 2) from None
    if p.returncode not in (0, 1) or not out.exists():
        lines = [x for x in p.stderr.splitlines() if x.strip()]
        message = lines[-1] if lines else f"repro-audit exited with {p.returncode} and no message"
        raise ReproAuditError(message, p.returncode if p.returncode not in (0, 1) else 4)
    return from_report(json.loads(out.read_text(encoding="utf-8")), p.returncode, p.stdout, str(report or ""))


def run(model, inputs, *, configs: Union[str, Sequence[str], None] = None, mode: str = "eval",
        repeats: Optional[int] = None, trace: bool = False, device: Optional[str] = None,
        report: Optional[str] = None, junit: Optional[str] = None, markdown: Optional[str] = None,
        html: Optional[str] = None, extra: Sequence[str] = ()) -> Result:
    """`repro-audit run` on a model object: is it bitwise reproducible across processes under each
    configuration? mode is "eval" (forward, run as `--mode infer`) or "train" (forward, backward and
    optimizer steps, from a TorchScript save). `extra` passes further options of `run` as they are."""
    if mode not in ("eval", "train"):
        raise ReproAuditError(f"mode must be 'eval' or 'train', not {mode!r}", 2)
    _check_model(model, "run")
    import torch

    with tempfile.TemporaryDirectory(prefix="repro-audit-") as tmp:
        folder = pathlib.Path(tmp)
        model_path, input_path = folder / "model.pt2", folder / "inputs.pt"
        torch.save(inputs, str(input_path))
        if save_model(model, inputs, model_path, train=mode == "train") == "torchscript":
            model_path = model_path.rename(folder / "model.pt")
        argv = ["run", str(model_path), "--input", str(input_path), "--mode", "train" if mode == "train" else "infer",
                *_options(configs, repeats, trace, device, extra), *_reports(junit, markdown, html)]
        return _run_binary(argv, folder, report)


def invariance(model, rows, *, sizes: Sizes = None, configs: Union[str, Sequence[str], None] = None,
               trace: bool = True, fix_search: bool = True, device: Optional[str] = None,
               report: Optional[str] = None, junit: Optional[str] = None, markdown: Optional[str] = None,
               html: Optional[str] = None, axis: Optional[str] = None, pad_others: Optional[str] = None,
               draft: Optional[int] = None, positions: Optional[int] = None, extra: Sequence[str] = ()) -> Result:
    """`repro-audit invariance` on a model object: does a row's result depend on the batch it shares?
    `rows` is a tensor (or tuple of tensors) whose first dimension is the batch; `sizes` batch sizes
    (a list, or a range: passed as ranges "1..16" however many), a string as --sizes takes it
    ("1..16,32", "auto"), or None for the tool's default.
    trace names the first differing op; fix_search measures the switches that make it invariant.
    axis ("batch", "pad", "verify"), pad_others ("right", "left"), draft and positions are --axis,
    --pad-others, --draft and --positions: what serving engines ask (the guide's "What serving engines
    ask")."""
    _check_model(model, "invariance")
    opts = [] if sizes is None else ["--sizes", _sizes_text(sizes)]
    import torch

    with tempfile.TemporaryDirectory(prefix="repro-audit-") as tmp:
        folder = pathlib.Path(tmp)
        model_path, input_path = folder / "model.pt2", folder / "rows.pt"
        torch.save(rows, str(input_path))
        if save_model(model, rows, model_path) == "torchscript":
            model_path = model_path.rename(folder / "model.pt")
        if not fix_search:
            opts.append("--no-fix-search")
        for flag, value in (("--axis", axis), ("--pad-others", pad_others), ("--draft", draft),
                            ("--positions", positions)):
            if value is not None:
                opts += [flag, str(value)]
        argv = ["invariance", str(model_path), "--input", str(input_path), *opts,
                *_options(configs, None, trace, device, extra), *_reports(junit, markdown, html)]
        return _run_binary(argv, folder, report)


def exec(argv: Sequence[str], *, artifacts: Sequence[str] = (), metrics: Optional[dict[str, str]] = None,
         configs: Union[str, Sequence[str], None] = None, repeats: Optional[int] = None,
         report: Optional[str] = None, junit: Optional[str] = None, markdown: Optional[str] = None,
         html: Optional[str] = None, extra: Sequence[str] = ()) -> Result:
    """`repro-audit exec ... -- ARGV`: runs a command (a training script, torchrun ...) once per
    repeat and configuration and compares the files it writes (`artifacts`, glob patterns) and the
    metrics it prints (`metrics`, name -> regular expression with one group). `argv` is the command
    as a list of arguments, as subprocess takes it: ["python", "train.py"]."""
    if isinstance(argv, (str, bytes, bytearray)):
        raise TypeError(f"repro_audit.exec() takes the command as a list of arguments, e.g. ['python', 'train.py'], "
                        f"not a string: shlex.split({argv!r}) splits one as a shell would")
    if isinstance(artifacts, (str, bytes, bytearray)):
        raise TypeError(f"repro_audit.exec() takes artifacts as a list of glob patterns, e.g. [{artifacts!r}], "
                        f"not a string")
    opts = []
    for a in artifacts:
        opts += ["--artifact", str(a)]
    for name, regex in (metrics or {}).items():
        opts += ["--metric", f"{name}={regex}"]
    with tempfile.TemporaryDirectory(prefix="repro-audit-") as tmp:
        argv_ = ["exec", *opts, *_options(configs, repeats, False, None, extra), *_reports(junit, markdown, html)]
        return _run_binary(argv_, pathlib.Path(tmp), report, tail=["--", *argv])
