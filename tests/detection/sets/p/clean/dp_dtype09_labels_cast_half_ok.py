# twin of: bugs/dp_dtype09_labels_cast_half.py
# area: dtype
# correct: the batch helper only casts floating-point tensors to the eval dtype; integer class ids keep their int64 dtype
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class EvalConfig:
    num_classes: int = 6000
    emb_dim: int = 64
    batch_size: int = 256
    dtype: torch.dtype = torch.float16 if device.type == "cuda" else torch.float32


def move_batch(batch, dtype):
    out = {}
    for key, value in batch.items():
        if value.is_floating_point():
            out[key] = value.to(device=device, dtype=dtype)
        else:
            out[key] = value.to(device=device)
    return out


class EmbeddingDataset(torch.utils.data.Dataset):
    """Precomputed landmark descriptors with their class id."""

    def __init__(self, prototypes, n_per_class=1, noise=0.05, seed=0):
        g = torch.Generator().manual_seed(seed)
        labels = torch.arange(prototypes.shape[0]).repeat_interleave(n_per_class)
        self.labels = labels
        self.embs = prototypes[labels] + noise * torch.randn(len(labels), prototypes.shape[1], generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"embedding": self.embs[i], "label": self.labels[i]}


class CosineClassifier(nn.Module):
    def __init__(self, prototypes, scale=16.0):
        super().__init__()
        self.weight = nn.Parameter(F.normalize(prototypes, dim=1))
        self.scale = scale

    def forward(self, x):
        return self.scale * F.normalize(x, dim=1) @ self.weight.t()


@torch.no_grad()
def evaluate(model, loader, cfg):
    model.eval()
    correct = torch.zeros((), device=device)
    nll = torch.zeros((), device=device)
    count = 0
    for batch in loader:
        batch = move_batch(batch, cfg.dtype)
        logits = model(batch["embedding"])
        labels = batch["label"].long()
        correct += (logits.argmax(dim=1) == labels).sum()
        nll += F.cross_entropy(logits.float(), labels, reduction="sum")
        count += labels.numel()
    return correct.item() / count, nll.item() / count


def main():
    cfg = EvalConfig()
    torch.manual_seed(0)
    prototypes = torch.randn(cfg.num_classes, cfg.emb_dim)
    model = CosineClassifier(prototypes).to(device=device, dtype=cfg.dtype)
    loader = torch.utils.data.DataLoader(EmbeddingDataset(prototypes), batch_size=cfg.batch_size)
    acc, nll = evaluate(model, loader, cfg)
    print(f"top-1 {acc:.4f}  nll {nll:.4f}")


if __name__ == "__main__":
    main()
