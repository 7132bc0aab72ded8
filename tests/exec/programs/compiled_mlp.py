# A small MLP with dropout, compiled with torch.compile (Inductor's CPU backend), trained a few
# steps with a seed, as users write it. Compiled random ops draw from Inductor's own generator
# unless torch._inductor.config.fallback_random is on, so compiled and eager runs part at the first
# dropout mask. Writes the weights to $REPRO_AUDIT_OUT/model.pt and prints each step's loss.
# --max-autotune compiles with mode="max-autotune".
import os
import sys

import torch

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(32, 1))
mode = "max-autotune-no-cudagraphs" if "--max-autotune" in sys.argv else None
step_model = torch.compile(model, mode=mode)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 16), torch.randn(64, 1)
for step in range(4):
    loss = torch.nn.functional.mse_loss(step_model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.8f}", flush=True)
torch.save(model.state_dict(), os.path.join(os.environ.get("REPRO_AUDIT_OUT", "."), "model.pt"))
