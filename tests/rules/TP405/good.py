import tempfile

import torch
import torch.distributed as dist


def main(model):
    dist.init_process_group("gloo")
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "ckpt.pt")


def save_on_master(obj, path):
    torch.save(obj, path)


class BestCheckpoint:
    def __init__(self, path):
        self.path, self.best = path, float("inf")

    def on_epoch_end(self, model, val_loss):
        if val_loss < self.best:
            self.best = val_loss
            torch.save(model.module.state_dict(), self.path)


def save_last(model, path):
    if dist.get_rank() != 0:
        return
    torch.save(model.state_dict(), path)


def train(model, path):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    callback = BestCheckpoint(path)
    for epoch in range(3):
        if dist.get_rank() == 0:
            callback.on_epoch_end(model, 1.0 / (epoch + 1))
        save_last(model, path)


def round_trip(model):
    dist.init_process_group("gloo")
    with tempfile.NamedTemporaryFile() as tmp:
        torch.save(model, tmp.name)
        return torch.load(tmp.name, weights_only=False)
