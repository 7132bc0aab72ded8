# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the golden set (tests/golden/golden.py): make_fixtures.py DIR."""
import sys, torch
d = sys.argv[1]
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 32)
        self.fc2 = torch.nn.Linear(32, 64)
    def forward(self, x):
        y = self.fc2(torch.tanh(self.fc1(x)))
        return (y * y).sum() / 1000.0
class BigSum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(1))
    def forward(self, x):
        return torch.sum(x * self.scale)
class BatchMean(torch.nn.Module):
    """invariance's case: each row minus the batch's mean, so a row's bits depend on the batch."""
    def forward(self, x):
        return x - x.mean(0, keepdim=True)
torch.manual_seed(0)
torch.jit.script(Net()).save(f"{d}/net.pt")
torch.jit.script(BigSum()).save(f"{d}/bigsum.pt")
torch.save(torch.randn(8, 64), f"{d}/input.pt")
torch.jit.script(BatchMean()).save(f"{d}/batchmean.pt")
torch.save(torch.randn(8, 16), f"{d}/rows.pt")
a = {"w": torch.randn(16, 16), "b": torch.randn(16)}
b = {"w": a["w"].clone(), "b": a["b"].clone()}
b["w"][3, 4] = b["w"][3, 4].item() + 1e-3
torch.save(a, f"{d}/ckpt_a.pt")
torch.save(b, f"{d}/ckpt_b.pt")
open(f"{d}/train.py", "w").write("""
import os, torch
torch.manual_seed(0)
m = torch.nn.Linear(8, 4)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(32, 8)
for step in range(3):
    loss = m(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"step {step} loss {loss.item():.6f}")
torch.save(m.state_dict(), os.path.join(os.environ["REPRO_AUDIT_OUT"], "ckpt.pt"))
""")
