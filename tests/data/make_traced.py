#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes eval_traced.pt: a small model with batch norm and dropout, traced with torch.jit.trace
# while in eval mode, which bakes training=False into the graph (the `run --mode train` warning
# test reads it). Run with the project's venv python:
# ~/.cache/repro-audit/venv/bin/python tests/data/make_traced.py
import pathlib

import torch

here = pathlib.Path(__file__).parent
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))
net.eval()
torch.jit.trace(net, torch.randn(3, 4)).save(str(here / "eval_traced.pt"))


# user_linear.pt: a model of the user's own (this file) around torch's nn.Linear, scripted, so
# that a lint finding's op sits in torch's linear.py and the user's line is this file's forward.
class UserNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(torch.relu(x))  # the user's line


torch.jit.script(UserNet()).save(str(here / "user_linear.pt"))
