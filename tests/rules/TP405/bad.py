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


class Checkpointer:
    def __init__(self, model, save_dir):
        self.model, self.save_dir = model, save_dir

    def save_weights(self, name):
        torch.save(self.model.state_dict(), f"{self.save_dir}/{name}.pt")


def do_train(model, checkpointer, steps):
    for step in range(steps):
        checkpointer.save_weights(f"step{step}")  # a parameter: the file's one such class


def launch(model, save_dir):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    do_train(model, Checkpointer(model, save_dir), 10)


def save_checkpoint(state, path):
    torch.save(state, path)


def per_node(model, args):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    if args.local_rank == 0:
        save_checkpoint(model.module.state_dict(), "ckpt.pt")
