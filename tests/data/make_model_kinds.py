#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes the files a user may hand to `run` or `lint` that are not TorchScript archives, for the
# one-line answers that say what each is (tests/cli/test_cli_errors.cpp): a pickled nn.Module
# (torch.save(model)), a legacy-format torch.save file, two torch.export archives
# (torch.export.save; one with index_add in a submodule, for lint, one with index_put_ for --trace),
# a small CNN, a Linear exported twice and once reweighted (identity by content), and an AOTInductor package's record layout. The package stand-in holds the
# record names aoti_compile_and_package wrote with torch 2.11 (a real one holds a compiled
# wrapper library of a few hundred KB, which does not belong in the repository; the answer reads
# only the names). Run with the project's venv python:
#   ~/.cache/repro-audit/venv/bin/python tests/data/make_model_kinds.py
import pathlib
import re
import zipfile

import torch

here = pathlib.Path(__file__).parent


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Scatter(torch.nn.Module):
    """A submodule that sums rows by an index: index_add, nondeterministic on CUDA."""

    def forward(self, x, index):
        return torch.zeros(4, x.shape[1]).index_add(0, index, x)


class ScatterNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.pool = Scatter()

    def forward(self, x, index):
        return self.pool(self.fc(x), index)


class SmallCNN(torch.nn.Module):
    """Convolution, batch norm, pooling and a classifier: an image model in miniature (1x3x16x16).
    It also returns the logits' squared norm, whose sum NativeRT runs as a static kernel."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1))
        self.classifier = torch.nn.Linear(16, 10)

    def forward(self, x):
        logits = self.classifier(torch.flatten(self.features(x), 1))
        return logits, (logits * logits).sum()


class Accumulate(torch.nn.Module):
    """Sums rows into 8 bins with index_put_(accumulate=True): on the CPU with several threads the
    order of the additions, and so the bits, change from run to run. One float input (--shape Nx4)."""

    def forward(self, x):
        index = (x[:, 0].abs() * 1000).long() % 8
        return torch.zeros(8, 4).index_put_((index,), x, accumulate=True)


def without_paths(archive):
    """The archive with each node's stack_trace naming files by base name: the paths of this machine
    (the script's, the venv's) do not belong in a committed fixture. Nothing reads them back."""
    with zipfile.ZipFile(archive) as z:
        items = [(i, z.read(i.filename)) for i in z.infolist()]
    with zipfile.ZipFile(archive, "w") as z:
        for info, data in items:
            if info.filename.endswith("models/model.json"):
                data = re.sub(rb'File \\"/[^"\\]*/([^"/\\]+)\\"', rb'File \\"\1\\"', data)
            z.writestr(info, data)


def main():
    torch.manual_seed(0)
    net = Net().eval()
    torch.save(net, here / "pickled_module.pt")
    torch.save(net.state_dict(), here / "legacy_state_dict.pt", _use_new_zipfile_serialization=False)
    exported = here / "exported.pt2"
    torch.export.save(torch.export.export(net, (torch.randn(2, 4),)), exported)
    without_paths(exported)
    # For lint of an export archive: index_add in the submodule `pool` (exported_index_add.pt2).
    scatter = here / "exported_index_add.pt2"
    torch.export.save(torch.export.export(ScatterNet().eval(), (torch.randn(6, 4), torch.tensor([0, 1, 1, 2, 3, 3]))), scatter)
    without_paths(scatter)
    # For --trace on an export archive: a root cause at index_put_ (exported_index_put.pt2).
    accumulate = here / "exported_index_put.pt2"
    # (a dynamic batch: the test feeds it 20000 rows, and the interpreter checks the exported sizes)
    torch.export.save(torch.export.export(Accumulate().eval(), (torch.randn(16, 4),),
                                          dynamic_shapes={"x": {0: torch.export.Dim("batch")}}), accumulate)
    without_paths(accumulate)
    # For identity by content: a Linear exported twice (other bytes, the same graph and weights)
    # and once more with one weight changed (exported_linear*.pt2).
    linear = torch.nn.Linear(4, 3).eval()
    x = torch.randn(2, 4)
    for name in ("exported_linear.pt2", "exported_linear_again.pt2"):
        torch.export.save(torch.export.export(linear, (x,)), here / name)
        without_paths(here / name)
    with torch.no_grad():
        linear.weight[0, 0] += 1.0
    torch.export.save(torch.export.export(linear, (x,)), here / "exported_linear_reweighted.pt2")
    without_paths(here / "exported_linear_reweighted.pt2")
    # An image model for run --trace on an export archive (exported_cnn.pt2).
    cnn = here / "exported_cnn.pt2"
    torch.export.save(torch.export.export(SmallCNN().eval(), (torch.randn(1, 3, 16, 16),)), cnn)
    without_paths(cnn)

    stem = "aoti_package"
    small = {"archive_format": "pt2", "archive_version": "0", ".data/version": "6\n", "byteorder": "little"}
    with zipfile.ZipFile(here / f"{stem}.pt2", "w") as z:
        for name in ["data/aotinductor/model/c0.wrapper.cpp", "data/aotinductor/model/c0.wrapper_metadata.json",
                     "data/aotinductor/model/c0.wrapper.so", "data/aotinductor/model/c1.kernel.cpp", *small]:
            z.writestr(f"{stem}/{name}", small.get(name, ""))


if __name__ == "__main__":
    main()
