# source: https://github.com/Lightning-AI/pytorch-lightning/issues/5641
# area: porting & distributed
# bug: the epoch-end accuracy is packed into a fresh CPU tensor and all_reduced, which the NCCL backend rejects on GPU runs
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class DigitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


class TestLoop:
    def __init__(self, model, device):
        self.model = model
        self.device = device
        self.outputs = []

    def test_step(self, images, targets):
        logits = self.model(images)
        preds = logits.argmax(dim=1)
        self.outputs.append({"correct": (preds == targets).sum(), "count": targets.numel()})

    def test_epoch_end(self):
        correct = torch.stack([o["correct"] for o in self.outputs]).sum().item()
        count = sum(o["count"] for o in self.outputs)
        stats = torch.tensor([correct, count], dtype=torch.float64)  # expect[w]: any
        if dist.is_initialized():
            dist.all_reduce(stats, op=dist.ReduceOp.SUM)  # expect[w]: any
        self.outputs.clear()
        return {"avg_test_acc": (stats[0] / stats[1]).item()}

    @torch.no_grad()
    def run(self, loader):
        self.model.eval()
        for images, targets in loader:
            self.test_step(images.to(self.device), targets.to(self.device))
        return self.test_epoch_end()


def init_distributed():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29615")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return device


def main():
    device = init_distributed()
    g = torch.Generator().manual_seed(7)
    test_set = TensorDataset(torch.rand(200, 1, 28, 28, generator=g),
                             torch.randint(0, 10, (200,), generator=g))
    loader = DataLoader(test_set, batch_size=50, sampler=DistributedSampler(test_set, shuffle=False))
    model = DigitClassifier().to(device)
    metrics = TestLoop(model, device).run(loader)
    if dist.get_rank() == 0:
        print(metrics)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
