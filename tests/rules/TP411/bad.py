import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(net):
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank)
    model = DDP(net, device_ids=[local_rank])
    model = model.to(device)
    return model

