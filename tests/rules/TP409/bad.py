import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))


def setup(model):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    return DDP(model.to(rank), device_ids=[rank])


def device_from_rank():
    return torch.device(f"cuda:{torch.distributed.get_rank()}")


def move(batch):
    rank = int(os.environ["RANK"])
    return batch.cuda(rank)


def move_global(batch):
    return batch.to(RANK, non_blocking=True)


class Trainer:
    def __init__(self):
        self.rank = dist.get_rank()

    def device(self):
        return torch.device("cuda", self.rank)


def configure(cfg):
    cfg["rank"] = dist.get_rank()
    cfg["device"] = torch.device(f"cuda:{cfg['rank']}")
    return cfg


class CacheConnector:
    def __init__(self, rank, pool):
        self.pool = pool
        self.device = torch.device("cuda", rank)


def serve():
    tp_rank = int(os.environ.get("RANK", 0))
    return CacheConnector(tp_rank, pool=[])


def spawned_worker(gpu, args):
    rank = args.node_rank * args.gpus_per_node + gpu
    dist.init_process_group("nccl", rank=rank, world_size=args.world_size)
    torch.cuda.set_device(rank)
