# A seeded, deterministic training script as users write them: seeds first, a DataLoader with its
# own generator, a checkpoint that holds the RNG states, and the weights as safetensors too
# (written by hand here: the format is a JSON header and raw bytes).
import json
import os
import random
import struct

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(1)  # the script's own choice: exec reports where it set it

data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = DataLoader(data, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(1))
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(2):
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"epoch {epoch} step {step} loss {loss.item():.8f}", flush=True)

out = os.environ.get("REPRO_AUDIT_OUT", ".")
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 2,
            "rng": {"cpu": torch.get_rng_state(), "python": random.getstate()}},
           os.path.join(out, "ckpt.pt"))

header, blobs, offset = {}, [], 0
for name, t in model.state_dict().items():
    raw = bytes(t.contiguous().view(torch.uint8).flatten().tolist())
    header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
text = json.dumps(header).encode()
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
