# A script that never seeds torch, with a shuffling DataLoader whose two workers draw from Python's
# random: the batches differ from run to run. --seed-torch seeds torch first; --generator gives
# the DataLoader a seeded generator instead. Either makes it reproducible: each worker reseeds
# random from the loader's base seed.
import os
import random
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        return torch.tensor([float(i), random.random()])


if "--seed-torch" in sys.argv:
    torch.manual_seed(0)
generator = torch.Generator().manual_seed(0) if "--generator" in sys.argv else None
loader = DataLoader(Noisy(), batch_size=8, shuffle=True, num_workers=2, generator=generator)
batches = torch.cat([b for b in loader])
torch.save({"batches": batches}, os.path.join(os.environ["REPRO_AUDIT_OUT"], "batches.pt"))
