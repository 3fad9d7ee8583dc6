# source: https://github.com/pytorch/examples/issues/1030
# area: porting & distributed
# bug: the meter packs its totals into a CPU tensor before dist.all_reduce; with the NCCL backend chosen on GPU this fails with "Tensors must be CUDA and dense"
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn


class SummaryMeter:
    def __init__(self, name, fmt=":.3f"):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.sum = 0.0
        self.count = 0

    def update(self, total, n):
        self.sum += float(total)
        self.count += int(n)

    def all_reduce(self):
        if not (dist.is_available() and dist.is_initialized()):
            return
        total = torch.tensor([self.sum, self.count], dtype=torch.float32)  # expect[w]: any
        dist.all_reduce(total, dist.ReduceOp.SUM)  # expect[w]: any
        self.sum, self.count = total.tolist()

    @property
    def avg(self):
        return self.sum / max(self.count, 1)

    def __str__(self):
        return ("{name} {avg" + self.fmt + "}").format(name=self.name, avg=self.avg)


def init_group(tmpdir):
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if "RANK" in os.environ:
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend)
    else:
        dist.init_process_group(backend, init_method=f"file://{tmpdir}/pg", rank=0, world_size=1)
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


@torch.no_grad()
def validate(model, batches, device):
    model.eval()
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device)
    seen = 0
    for images, target in batches:
        images, target = images.to(device), target.to(device)
        out = model(images)
        loss_sum += loss_fn(out, target)
        correct += (out.argmax(dim=1) == target).sum()
        seen += target.numel()
    losses, top1 = SummaryMeter("Loss"), SummaryMeter("Acc@1", ":.2%")
    losses.update(loss_sum.item(), seen)
    top1.update(correct.item(), seen)
    losses.all_reduce()
    top1.all_reduce()
    return losses, top1


def main():
    with tempfile.TemporaryDirectory() as tmpdir:
        device = init_group(tmpdir)
        torch.manual_seed(dist.get_rank())
        model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
        g = torch.Generator().manual_seed(10 + dist.get_rank())
        batches = [(torch.randn(16, 3, 8, 8, generator=g), torch.randint(0, 10, (16,), generator=g))
                   for _ in range(5)]
        losses, top1 = validate(model, batches, device)
        if dist.get_rank() == 0:
            print(f" * {losses}  {top1}  over {int(top1.count)} images")
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
