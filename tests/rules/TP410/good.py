import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train_data_parallel(model, path):
    model = nn.DataParallel(model).cuda()
    torch.save(model.module.state_dict(), path)


def train_ddp(model, local_rank, path):
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    model_without_ddp = model.module
    if dist.get_rank() == 0:
        torch.save({"model": model_without_ddp.state_dict()}, path)
        torch.save(getattr(model, "module", model).state_dict(), path)


def save_before_wrapping(model, path):
    torch.save(model.state_dict(), path)
    model = DDP(model)
    return model


def resume(model, path):
    model = DDP(model)
    model.load_state_dict(torch.load(path))
    torch.save(model.state_dict(), path)


def save_checkpoint(net, path):
    torch.save(net.state_dict(), path)


def main(net, path):
    net = nn.DataParallel(net).cuda()
    save_checkpoint(net.module, path)


class Solver:
    def __init__(self, net):
        self.net = net.cuda()
        self.ema = nn.DataParallel(net)

    def save(self, path):
        torch.save(self.net.state_dict(), path)


def unwrap(model):
    return model.module if isinstance(model, nn.DataParallel) else model


def train_on_what_is_there(model, path):
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    torch.save(unwrap(model).state_dict(), path)


class Wrapper:
    def __init__(self, build, distributed):
        model = build()
        if distributed:
            model = torch.nn.parallel.DistributedDataParallel(model)
        self.model = model

    def save(self, path):
        bare = self.model.module if hasattr(self.model, "module") else self.model
        torch.save({"model": bare.state_dict()}, path)


class Learner:
    def __init__(self, net):
        self.model = net.cuda()

    def save_state(self, path):
        torch.save(self.model.state_dict(), path)

    def wrap_ddp(self, local_rank):
        self.model = DDP(self.model, device_ids=[local_rank])


def pretrain_then_finetune(net, local_rank, path):
    pretrain = Learner(net)
    pretrain.save_state(path)  # never wrapped: bare keys
    learner = Learner(net)
    learner.wrap_ddp(local_rank)


def maybe_parallel(net, device):
    net = net.to(device)
    if torch.cuda.device_count() > 1:
        net = nn.DataParallel(net)
    return net


def pretrain(net, device, path):
    model = maybe_parallel(net, device)
    bare = model.module if isinstance(model, nn.DataParallel) else model
    torch.save(bare.state_dict(), path)


class BestCheckpoint:
    def __init__(self, path, model):
        self.path = path
        self.model = model

    def __call__(self, score):
        torch.save({"score": score, "state_dict": self.model.state_dict()}, self.path)


def fit_with_callback(net, local_rank, path):
    model = DDP(net.cuda(local_rank), device_ids=[local_rank])
    checkpoint = BestCheckpoint(path, model.module)  # handed the bare model
    checkpoint(0.5)
