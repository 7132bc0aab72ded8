# index_put_ with accumulate=True and many duplicate indices: on the CPU with several threads the
# sums are added in an order that changes from run to run.
import os
import sys

import torch

torch.manual_seed(0)
n = 1 << 21
idx = torch.randint(0, 64, (n,))
val = torch.randn(n)
out = torch.zeros(64)
out.index_put_((idx,), val, accumulate=True)
torch.save(out, os.path.join(os.environ["REPRO_AUDIT_OUT"], "sums.pt"))
