# A small training script as users write them: a model and Adam, a few steps with the loss printed,
# and a checkpoint of both written into $REPRO_AUDIT_OUT. Seeded, it is reproducible; with
# --unseeded it never seeds torch, so its initial weights and the whole checkpoint differ per run.
import os
import sys

import torch

if "--unseeded" not in sys.argv:
    torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.linspace(-1, 1, 32 * 8).reshape(32, 8)
for step in range(3):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}", flush=True)
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()},
           os.path.join(os.environ["REPRO_AUDIT_OUT"], "ckpt.pt"))
