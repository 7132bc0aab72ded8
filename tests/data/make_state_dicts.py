#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes the torch.save fixtures the `diff` tests read: state_dict() files exactly as Python saves
# them (collections.OrderedDict with its _metadata attribute, parameters and buffers of several
# dtypes, a view sharing its storage), which LibTorch's own unpickler cannot read. Run with the
# project's venv python: ~/.cache/repro-audit/venv/bin/python tests/data/make_state_dicts.py
import pathlib

import torch

here = pathlib.Path(__file__).parent
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2).to(torch.float64))
a = net.state_dict()
torch.save(a, here / "state_dict_a.pt")

b = {k: v.clone() for k, v in a.items()}
b["0.weight"][1, 2] = torch.nextafter(b["0.weight"][1, 2], torch.tensor(10.0))  # one ULP
b["2.bias"] += 0.5
b = type(a)(b)
b._metadata = a._metadata
torch.save(b, here / "state_dict_b.pt")

# Nested containers and views: a dict of an OrderedDict, a list, a tuple, a view into a larger
# storage, an int64 and a bool tensor.
base = torch.arange(12, dtype=torch.float32)
torch.save({"model": a, "extra": [base[2:6].view(2, 2), (torch.tensor([1, 2], dtype=torch.int64), torch.tensor([True, False]))]},
           here / "nested.pt")

# A class repro-audit does not read (it never runs code from a file): one clear error line.
import datetime

torch.save({"w": torch.ones(2), "saved_on": datetime.date(2026, 1, 1)}, here / "foreign_class.pt")

# Training checkpoints as people save them: the model's state_dict, Adam's state_dict (int keys,
# a tuple of betas, None and bool options), and plain values. B is one epoch later, with one weight
# changed; its optimizer state is the same.
ckpt_net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
opt = torch.optim.Adam(ckpt_net.parameters(), lr=1e-3)
ckpt_net(torch.randn(8, 4)).sum().backward()
opt.step()
torch.save({"model": ckpt_net.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "note": "run-a", "best": 0.25},
           here / "checkpoint_a.pt")
with torch.no_grad():
    ckpt_net[0].weight[0, 0] += 1e-3
torch.save({"model": ckpt_net.state_dict(), "optimizer": opt.state_dict(), "epoch": 4, "note": "run-a", "best": 0.25},
           here / "checkpoint_b.pt")
