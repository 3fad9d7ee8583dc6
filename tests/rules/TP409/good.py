import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(model):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return DDP(model.to(local_rank), device_ids=[local_rank])


def tutorial(model):
    rank = dist.get_rank()
    device_id = rank % torch.cuda.device_count()
    model = DDP(model.to(device_id), device_ids=[device_id])
    if rank == 0:
        print(f"rank {rank} on cuda:{device_id}")
    return model


def worker(rank, world_size, model):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    return DDP(model.to(rank), device_ids=[rank])


def reassigned(batch):
    rank = dist.get_rank()
    rank = int(os.environ["LOCAL_RANK"])
    return batch.to(f"cuda:{rank}")


class Trainer:
    def __init__(self, local_rank):
        self.rank = dist.get_rank()
        self.local_rank = local_rank
        self.device = torch.device("cuda", self.local_rank)

    def log(self, msg):
        print(f"[rank {self.rank}] {msg}")


if __name__ == "__main__":
    mp.spawn(worker, args=(2, torch.nn.Linear(2, 2)), nprocs=2)


class CacheConnector:
    def __init__(self, rank, pool):
        self.pool = pool
        self.device = torch.device("cuda", rank)


def serve():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    return CacheConnector(local_rank, pool=[])


def spawned_worker(gpu, args):
    rank = args.node_rank * args.gpus_per_node + gpu
    dist.init_process_group("nccl", rank=rank, world_size=args.world_size)
    torch.cuda.set_device(gpu)
