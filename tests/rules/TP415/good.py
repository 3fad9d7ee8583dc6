import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, local_rank):
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model).to(local_rank)
    return DDP(model, device_ids=[local_rank])


def build_two(model, head, local_rank):
    wrapped = DDP(model.to(local_rank), device_ids=[local_rank])
    head = nn.SyncBatchNorm.convert_sync_batchnorm(head)  # another module, not the wrapped one
    return wrapped, head
