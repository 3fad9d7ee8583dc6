import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


@torch.no_grad()
def validate(model, loader, device):
    correct = total = 0
    for x, y in loader:
        correct += (model(x.to(device)).argmax(1) == y.to(device)).sum()
        total += y.numel()
    return 100.0 * correct / total


def main(model, val_set, local_rank):
    dist.init_process_group("nccl")
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    val_loader = DataLoader(val_set, batch_size=64, sampler=DistributedSampler(val_set))
    accuracy = validate(model, val_loader, local_rank)
    if dist.get_rank() == 0:
        print(accuracy)


class Trainer:
    def __init__(self, model, local_rank):
        self.device = torch.device("cuda", local_rank)
        self.model = DDP(model.to(self.device), device_ids=[local_rank])

    def _loader(self, dataset):
        return DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))

    @torch.no_grad()
    def evaluate(self, loader):
        total = torch.zeros((), device=self.device)
        count = torch.zeros((), device=self.device)
        for x, y in loader:
            total += torch.nn.functional.mse_loss(self.model(x.to(self.device)), y.to(self.device))
            count += 1
        return total / count

    def fit(self, val_set):
        val_loader = self._loader(val_set)
        return self.evaluate(val_loader).item()  # rank 0 stops early on its shard's loss


@torch.no_grad()
def rank_queries(model, loader, device):
    mrr = torch.zeros((), device=device)
    n = torch.zeros((), device=device)
    for q, pos in loader:
        scores = model(q.to(device))
        rank = (scores > scores.gather(1, pos.to(device)[:, None])).sum(1) + 1  # a tensor gather
        mrr += (1.0 / rank).sum()
        n += len(pos)
    return {"mrr": mrr / n}


def fit(model, val_loader, device):
    return rank_queries(model, val_loader, device)["mrr"].item()


def launch(model, val_set, local_rank):
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    val_loader = DataLoader(val_set, batch_size=32, sampler=DistributedSampler(val_set))
    return fit(model, val_loader, local_rank)


@torch.no_grad()
def detection_scores(model, loader, device):
    hits = torch.zeros((), device=device)
    found = torch.zeros((), device=device)
    for images, boxes in loader:
        preds = model(images.to(device))
        hits += (preds[:, 4] > 0.5).sum()
        found += boxes.shape[0]
    recall = hits / found.clamp(min=1)
    return {"recall": recall}


def evaluate_detector(model, dataset, local_rank):
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=False))
    return detection_scores(model, loader, local_rank)


@torch.no_grad()
def top1(model, loader, device):
    correct = torch.zeros((), device=device)
    seen = torch.zeros((), device=device)
    for x, y in loader:
        correct += (model(x.to(device)).argmax(1) == y.to(device)).sum()
        seen += y.numel()
    return (correct / seen).item()


def validate_when_distributed(model, val_set, distributed, device):
    sampler = DistributedSampler(val_set, shuffle=False) if distributed else None
    val_loader = DataLoader(val_set, batch_size=64, sampler=sampler)
    return top1(model, val_loader, device)
