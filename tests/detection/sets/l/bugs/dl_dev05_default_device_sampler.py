# source: https://github.com/pytorch/pytorch/issues/118084
# area: device placement
# bug: torch.set_default_device("cuda") also reaches the DataLoader's RandomSampler, whose torch.randperm then runs on cuda with a CPU torch.Generator, so iterating the shuffled loader fails on a GPU
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def get_default_device():
    if torch.cuda.is_available():
        torch.set_default_device("cuda")  # expect[d]: any
        return torch.device("cuda")
    return torch.device("cpu")


CONFIG = {
    "vocab_size": 200,
    "max_length": 24,
    "n_labels": 3,
    "batch_size": 8,
    "lr": 3e-3,
    "epochs": 2,
}


class SentimentDataset(Dataset):
    def __init__(self, num_samples, vocab_size, max_length, n_labels, seed=0):
        rng = np.random.default_rng(seed)
        self.tokens = rng.integers(1, vocab_size, size=(num_samples, max_length))
        self.lengths = rng.integers(4, max_length + 1, size=num_samples)
        self.labels = rng.integers(0, n_labels, size=num_samples)

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, idx):
        ids = self.tokens[idx].copy()
        ids[self.lengths[idx]:] = 0
        return {
            "input_ids": torch.from_numpy(ids),
            "attention_mask": torch.from_numpy((ids != 0).astype(np.int64)),
            "label": torch.from_numpy(np.asarray(self.labels[idx])),
        }


class BagOfEmbeddingsClassifier(nn.Module):
    def __init__(self, vocab_size, dim, n_labels):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Dropout(0.1))
        self.head = nn.Linear(dim, n_labels)

    def forward(self, input_ids, attention_mask):
        emb = self.embed(input_ids)
        mask = attention_mask.unsqueeze(-1).to(emb.dtype)
        pooled = (emb * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(self.encoder(pooled))


def train_model(model, loader, device, cfg):
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        model.train()
        total = torch.zeros((), device=device)
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            logits = model(batch["input_ids"], batch["attention_mask"])
            loss = F.cross_entropy(logits, batch["label"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss {(total / len(loader)).item():.4f}")


def main():
    torch.manual_seed(0)
    device = get_default_device()
    cfg = CONFIG
    train_ds = SentimentDataset(96, cfg["vocab_size"], cfg["max_length"], cfg["n_labels"])
    train_loader = DataLoader(train_ds, batch_size=cfg["batch_size"], shuffle=True)  # expect[d]: any
    model = BagOfEmbeddingsClassifier(cfg["vocab_size"], 32, cfg["n_labels"]).to(device)
    train_model(model, train_loader, device, cfg)


if __name__ == "__main__":
    main()
