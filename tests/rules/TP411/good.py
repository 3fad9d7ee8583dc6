import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(net):
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank)
    model = DDP(net.to(device), device_ids=[local_rank])
    return model


def setup_moved_first(net, device, local_rank):
    net.to(device)
    model = DDP(net, device_ids=[local_rank])
    return model.to(torch.bfloat16)  # a dtype, after the wrap: fine


def setup_on_cpu(net):
    dist.init_process_group("gloo")
    model = DDP(net)  # no device ids: a CPU module is what gloo runs
    return model.to("cpu")


def wrap_all_gpus(net):
    model = torch.nn.DataParallel(net)
    model.cuda()  # moves the wrapped module too, before the first forward pass
    return model
