import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train_data_parallel(model, path):
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    model.cuda()
    torch.save(model.state_dict(), path)


def train_ddp(model, local_rank, path):
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    for epoch in range(3):
        if dist.get_rank() == 0:
            torch.save({"epoch": epoch, "model": model.state_dict()}, path)


def save_checkpoint(net, optimizer, path):
    state = {"state_dict": net.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save(state, path)


def main(net, optimizer, path):
    net = nn.DataParallel(net).cuda()
    save_checkpoint(net, optimizer, path)


class Solver:
    def __init__(self, net):
        self.net = nn.DataParallel(net.cuda())

    def save(self, path):
        torch.save(self.net.state_dict(), path)


class Wrapper:
    def __init__(self, build, distributed):
        model = build()
        if distributed:
            model = torch.nn.parallel.DistributedDataParallel(model)
        self.model = model

    def save(self, path):
        torch.save({"model": self.model.state_dict()}, path)


class Learner:
    def __init__(self, net):
        self.model = net.cuda()

    def save_state(self, path):
        torch.save(self.model.state_dict(), path)

    def wrap_ddp(self, local_rank):
        self.model = DDP(self.model, device_ids=[local_rank])


def finetune(net, local_rank, path):
    learner = Learner(net)
    learner.wrap_ddp(local_rank)
    learner.save_state(path)  # wrapped by now: module. keys


def maybe_parallel(net, device):
    net = net.to(device)
    if torch.cuda.device_count() > 1:
        net = nn.DataParallel(net)
    return net


def pretrain(net, device, path):
    model = maybe_parallel(net, device)
    torch.save(model.state_dict(), path)


class BestCheckpoint:
    def __init__(self, path, model):
        self.path = path
        self.model = model

    def __call__(self, score):
        torch.save({"score": score, "state_dict": self.model.state_dict()}, self.path)


def fit_with_callback(net, local_rank, path):
    model = DDP(net.cuda(local_rank), device_ids=[local_rank])
    checkpoint = BestCheckpoint(path, model)
    checkpoint(0.5)
