# DistributedDataParallel on a tiny model, two gloo ranks under torchrun: every rank ends with the
# same parameters, saved per rank. --rank-dependent perturbs rank 1's copy after training, as a
# bug that skips a collective would.
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(100 + rank)
for step in range(3):
    x = torch.randn(8, 4, generator=g)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
if "--rank-dependent" in sys.argv and rank == 1:
    with torch.no_grad():
        model.module.bias.add_(1e-3)
torch.save(model.module.state_dict(), os.path.join(os.environ["REPRO_AUDIT_OUT"], f"model-{rank}.pt"))
dist.destroy_process_group()
