import os

import torch

local_rank = int(os.environ.get("LOCAL_RANK", 0))
device = torch.device("cuda", local_rank)
torch.cuda.set_device(local_rank)
fallback = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
plain = torch.device("cuda" if torch.cuda.is_available() else "cpu")
