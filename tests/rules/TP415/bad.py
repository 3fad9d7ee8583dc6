import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, local_rank):
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return model
