import torch
import torch.distributed as dist


def evaluate(correct, total):
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    stats = torch.tensor([correct, total], dtype=torch.float32)
    dist.all_reduce(stats)
    flags = torch.zeros(2)
    dist.broadcast(flags, src=0)
    return stats


class RunningMean:
    def _reduce(self, tensor):
        dist.all_reduce(tensor)
        return tensor

    def count(self, batch):
        return self._reduce(torch.tensor(batch.shape[0]))


def reduce_mean(value):
    value = value.clone()  # a copy, on the same device
    dist.all_reduce(value)
    value /= dist.get_world_size()
    return value


def epoch_end(scores):
    auc = torch.tensor(float(scores.mean()))
    return reduce_mean(auc)
