# source: https://github.com/m-bain/frozen-in-time/pull/9
# area: porting & distributed
# bug: a DataParallel state_dict ("module." keys) is loaded with strict=False, so nothing loads
import os
import tempfile

import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
path = os.path.join(tempfile.mkdtemp(), "weights.pt")
trained = nn.DataParallel(nn.Linear(3, 2)).to(device)  # expect[s]: TP401
torch.save(trained.state_dict(), path)

fresh = nn.Linear(3, 2).to(device)
result = fresh.load_state_dict(torch.load(path, map_location=device), strict=False)  # expect[s]: any
print("missing:", len(result.missing_keys))
