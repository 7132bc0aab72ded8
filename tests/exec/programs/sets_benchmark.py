# A script that turns cuDNN's benchmark mode on itself, after the model is built: under `det`
# exec reports the override and this file's line.
import os

import torch

torch.manual_seed(0)
conv = torch.nn.Conv2d(3, 4, 3)
torch.backends.cudnn.benchmark = True
y = conv(torch.randn(1, 3, 8, 8))
torch.save(y, os.path.join(os.environ["REPRO_AUDIT_OUT"], "y.pt"))
