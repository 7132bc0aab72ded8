# SPDX-License-Identifier: Apache-2.0
"""A small CUDA training run for `repro-audit exec` (bench/gpu_check.sh): seeded, five SGD steps of an
embedding with many repeated indices (its dense gradient diverged under `default` on an H200), a
convolution and a linear head. Prints `loss=<value>` per step, with Python's repr of the float, so
`nan` and `inf` print as such and a --metric regex of `loss=(\\S+)` matches them too; saves the
final weights to out/model.pt. `--device cpu` runs it without a GPU."""
import argparse
import os

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=5)
    a = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device(a.device)
    emb = torch.nn.Embedding(64, 64).to(dev)
    conv = torch.nn.Conv2d(4, 16, 3, padding=1).to(dev)
    head = torch.nn.Linear(16 * 16 * 16, 10).to(dev)
    params = list(emb.parameters()) + list(conv.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.05)
    gen = torch.Generator(device="cpu").manual_seed(1)
    for step in range(a.steps):
        idx = torch.randint(0, 64, (32, 1024), generator=gen).to(dev)      # 32 samples x 1024 tokens
        y = torch.randint(0, 10, (32,), generator=gen).to(dev)
        x = emb(idx).reshape(32, 4, 16, 16, 64).mean(-1)                   # many repeated rows per sample
        logits = head(torch.relu(conv(x)).flatten(1))
        loss = torch.nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step %d loss=%r" % (step, loss.item()), flush=True)
    os.makedirs("out", exist_ok=True)
    torch.save({"emb": emb.state_dict(), "conv": conv.state_dict(), "head": head.state_dict()}, "out/model.pt")


if __name__ == "__main__":
    main()
