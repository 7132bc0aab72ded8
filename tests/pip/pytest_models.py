# SPDX-License-Identifier: Apache-2.0
# The pytest plugin on model objects, as a user's test file would use it; run by test_pip_install.py
# with the pip-installed package, never collected by the project's own runs (its name is not test_*).
# The Linear layer is batch-variant on a CPU whose GEMM blocks another batch size differently (the
# outer test checks this in Python first and expects the failure only then).
import pytest
import torch


class Elementwise(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0) - x.sigmoid()


def test_elementwise_is_batch_invariant(repro_audit):
    torch.manual_seed(0)
    repro_audit.assert_batch_invariant(Elementwise(), torch.randn(20, 64), sizes=[1, 2, 3, 4, 8])


def test_linear_is_reproducible(repro_audit):
    torch.manual_seed(0)
    repro_audit.assert_reproducible(torch.nn.Linear(256, 256), torch.randn(8, 256), configs="default", repeats=2)


def test_linear_is_batch_invariant(repro_audit):
    torch.manual_seed(0)
    repro_audit.assert_batch_invariant(torch.nn.Linear(256, 256), torch.randn(20, 256), sizes=[1, 2, 3, 4, 8, 16])


# Two ids that differ only in punctuation: each keeps its own reports (a hash of the id in the name).
@pytest.mark.parametrize("scale", [1.0, 2.0], ids=["x+y", "x*y"])
def test_scaled_is_reproducible(repro_audit, scale):
    torch.manual_seed(0)
    repro_audit.assert_reproducible(Elementwise(), torch.randn(4, 8) * scale, configs="default", repeats=2, trace=False)
