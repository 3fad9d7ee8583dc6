import torch
import torch.distributed as dist


def main(model):
    dist.init_process_group("gloo")
    torch.save(model.state_dict(), "ckpt.pt")


class BestCheckpoint:
    def __init__(self, path):
        self.path, self.best = path, float("inf")

    def on_epoch_end(self, model, val_loss):
        if val_loss < self.best:
            self.best = val_loss
            torch.save(model.module.state_dict(), self.path)


def train(model, path):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    callback = BestCheckpoint(path)
    for epoch in range(3):
        callback.on_epoch_end(model, 1.0 / (epoch + 1))
