# twin of: bugs/dev18_torch_load_no_map_location.py
# area: device placement
# correct: torch.load of a cache this script wrote from NumPy arrays holds no device tensor
import os
import tempfile

import numpy as np
import torch

cache = os.path.join(tempfile.mkdtemp(), "features.pt")
features = {"mean": np.zeros(4, dtype=np.float32), "ids": np.arange(10)}
torch.save(features, cache)

loaded = torch.load(cache, weights_only=False)
print(loaded["mean"].shape, int(loaded["ids"].sum()))
