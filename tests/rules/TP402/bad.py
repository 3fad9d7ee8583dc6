import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(4, 2).cuda())
# a comment that mentions torch.cuda.set_device does not bind the process to a GPU
