# SPDX-License-Identifier: Apache-2.0
"""What the batch-invariance probes should find on this machine, measured here with the torch of
the build's venv: the CPU probes' shapes (probes/batch_invariance.cpp) on seeded inputs, row 0
of each batch of M compared bit for bit, the sizes grouped into classes of identical rows.

usage: batch_classes.py OP...   prints {"OP": [[1, 2, 3], [4, ...]], ...} as JSON
The tests compare the tool's classes with these, never with thresholds written down.
"""
import json
import sys

import torch
import torch.nn.functional as F

SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 65, 128, 257]
K, N = 64, 48


def ops(g):
    big = SIZES[-1]
    r = lambda *shape: torch.randn(*shape, generator=g)
    a, b, bias, w = r(big, K), r(K, N), r(N), r(N, K)
    x3, y3 = r(big, 8, 16), r(big, 16, 12)
    img, cw = r(big, 3, 8, 8), r(8, 3, 3, 3)
    q, k, v = r(big, 2, 16, 8), r(big, 2, 16, 8), r(big, 2, 16, 8)
    up = lambda t: torch.nextafter(t, torch.full_like(t, float("inf")))
    return {
        "mm": lambda m: torch.mm(a[:m], b),
        "addmm": lambda m: torch.addmm(bias, a[:m], b),
        "linear": lambda m: F.linear(a[:m], w, bias),
        "bmm": lambda m: torch.bmm(x3[:m], y3[:m]),
        "conv2d": lambda m: F.conv2d(img[:m], cw),
        "layer_norm": lambda m: F.layer_norm(a[:m], (K,)),
        "rms_norm": lambda m: F.rms_norm(a[:m], (K,)),
        "softmax": lambda m: torch.softmax(a[:m], -1),
        "log_softmax": lambda m: torch.log_softmax(a[:m], -1),
        "sum": lambda m: a[:m].sum(-1),
        "mean": lambda m: a[:m].mean(-1),
        "sdpa": lambda m: F.scaled_dot_product_attention(q[:m], k[:m], v[:m]),
        "detect-control": lambda m: a[:m].clone() if m == 1 else up(a[:m].clone()),
    }


def classes(f):
    rows = {m: f(m)[:1] for m in SIZES}
    out = []
    for m in SIZES:
        for c in out:
            if torch.equal(rows[c[0]], rows[m]):
                c.append(m)
                break
        else:
            out.append([m])
    return out


def main():
    table = ops(torch.Generator().manual_seed(20261126))
    with torch.no_grad():
        print(json.dumps({name: classes(table[name]) for name in sys.argv[1:]}))


if __name__ == "__main__":
    main()
