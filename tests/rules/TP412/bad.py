import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(rank, world_size):
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world_size)


def worker(rank, world_size):
    setup(rank, world_size)
    device = torch.device("cuda", rank)
    model = DDP(torch.nn.Linear(4, 2).to(device), device_ids=[rank])
    model(torch.randn(8, 4, device=device)).sum().backward()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
