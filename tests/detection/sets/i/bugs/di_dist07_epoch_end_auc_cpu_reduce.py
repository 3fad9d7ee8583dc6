# source: https://github.com/Lightning-AI/pytorch-lightning/issues/2442
# area: porting & distributed
# bug: the numpy ROC-AUC is wrapped in a CPU tensor and then all-reduced next to CUDA losses, which the NCCL group used for multi-GPU DDP rejects
import os
import socket

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def roc_auc_score(y_true, y_score):
    order = np.argsort(y_score, kind="mergesort")
    ranks = np.empty(len(y_score), dtype=np.float64)
    ranks[order] = np.arange(1, len(y_score) + 1)
    n_pos = y_true.sum()
    n_neg = len(y_true) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.5
    return float((ranks[y_true == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def reduce_mean(value):
    if dist.is_available() and dist.is_initialized():
        value = value.clone()
        dist.all_reduce(value, op=dist.ReduceOp.SUM)
        value /= dist.get_world_size()
    return value


class LesionClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(1)


class ValidationLoop:
    def __init__(self, model, device):
        self.model, self.device = model, device

    def validation_step(self, batch):
        x, y = (t.to(self.device) for t in batch)
        logits = self.model(x)
        return {"val_loss": F.binary_cross_entropy_with_logits(logits, y.float()),
                "y_pred": torch.sigmoid(logits), "y_true": y}

    def validation_epoch_end(self, outputs):
        avg_loss = torch.stack([o["val_loss"] for o in outputs]).mean()
        y_pred = torch.cat([o["y_pred"] for o in outputs]).cpu().numpy()
        y_true = torch.cat([o["y_true"] for o in outputs]).cpu().numpy()
        auc = torch.tensor(roc_auc_score(y_true, y_pred))  # expect: any
        return {"val_loss": reduce_mean(avg_loss), "auc": reduce_mean(auc)}

    @torch.no_grad()
    def run(self, loader):
        self.model.eval()
        outputs = [self.validation_step(batch) for batch in loader]
        return self.validation_epoch_end(outputs)


def main():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    torch.manual_seed(0)
    images = torch.randn(160, 3, 32, 32)
    labels = (images[:, 0].mean(dim=(1, 2)) > 0).long()
    val_set = TensorDataset(images, labels)
    loader = DataLoader(val_set, batch_size=32, sampler=DistributedSampler(val_set, shuffle=False))
    model = DDP(LesionClassifier().to(device), device_ids=[local_rank] if use_cuda else None)
    metrics = ValidationLoop(model, device).run(loader)
    if dist.get_rank() == 0:
        print(f"val_loss {metrics['val_loss'].item():.4f} auc {metrics['auc'].item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
