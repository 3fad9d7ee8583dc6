import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank)
    model = DDP(torch.nn.Linear(4, 2).to(device), device_ids=[local_rank])
    model(torch.randn(8, 4, device=device)).sum().backward()
    dist.destroy_process_group()


def on_cpu():
    dist.init_process_group("gloo")  # no GPU to choose


if __name__ == "__main__":
    main()
