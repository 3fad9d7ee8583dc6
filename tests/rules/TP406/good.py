import torch
import torch.distributed as dist


def evaluate(correct, total, device):
    dist.init_process_group("nccl")
    stats = torch.tensor([correct, total], dtype=torch.float32, device=device)
    dist.all_reduce(stats)
    return stats


def gloo_side_group(values):
    cpu_group = dist.new_group(backend="gloo")
    local = torch.tensor(values)
    dist.all_reduce(local, group=cpu_group)  # a gloo group for CPU tensors


class RunningMean:
    def __init__(self, device):
        self.device = device

    def _reduce(self, tensor):
        dist.all_reduce(tensor)
        return tensor

    def count(self, batch):
        return self._reduce(torch.tensor(batch.shape[0], device=self.device))
