# twin of: bugs/dh_sync05_extractor_loader_unpinned.py
# area: transfer & sync
# correct: loaders use worker processes and pinned memory when CUDA is present, so the non_blocking copies are truly asynchronous and batches are prepared ahead
import random
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset


@dataclass
class ExtractorConfig:
    vocab_size: int = 500
    emb_dim: int = 32
    hidden: int = 48
    batch_size: int = 16
    lr: float = 1e-3
    epochs: int = 2
    num_workers: int = 2


class MatchDataset(Dataset):
    """Synthetic articles: each item is (sentences, extraction labels)."""

    def __init__(self, split, size=96, seed=0):
        rng = random.Random(f"{split}-{seed}")
        self.items = []
        for _ in range(size):
            n_sent = rng.randint(3, 8)
            sents = [[rng.randrange(1, 500) for _ in range(rng.randint(4, 12))] for _ in range(n_sent)]
            labels = [1.0 if rng.random() < 0.3 else 0.0 for _ in range(n_sent)]
            self.items.append((sents, labels))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


def coll_fn(batch):
    flat, labels, doc_ids = [], [], []
    for doc_id, (sents, lab) in enumerate(batch):
        flat.extend(torch.tensor(s, dtype=torch.long) for s in sents)
        labels.extend(lab)
        doc_ids.extend([doc_id] * len(sents))
    return pad_sequence(flat, batch_first=True), torch.tensor(labels), torch.tensor(doc_ids)


class SentenceExtractor(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg.vocab_size, cfg.emb_dim, padding_idx=0)
        self.conv = nn.Conv1d(cfg.emb_dim, cfg.hidden, 3, padding=1)
        self.score = nn.Linear(cfg.hidden, 1)

    def forward(self, tokens):
        h = self.conv(self.emb(tokens).transpose(1, 2)).relu()
        return self.score(h.max(dim=-1).values).squeeze(-1)


def build_loaders(cfg):
    pin = torch.cuda.is_available()
    train_loader = DataLoader(MatchDataset("train"), batch_size=cfg.batch_size, shuffle=True,
                              num_workers=cfg.num_workers, collate_fn=coll_fn, pin_memory=pin,
                              persistent_workers=cfg.num_workers > 0)
    val_loader = DataLoader(MatchDataset("val", size=32), batch_size=cfg.batch_size, shuffle=False,
                            num_workers=cfg.num_workers, collate_fn=coll_fn, pin_memory=pin,
                            persistent_workers=cfg.num_workers > 0)
    return train_loader, val_loader


def run_epoch(model, loader, device, optimizer=None):
    training = optimizer is not None
    model.train(training)
    crit = nn.BCEWithLogitsLoss()
    total = torch.zeros((), device=device)
    with torch.set_grad_enabled(training):
        for tokens, labels, _ in loader:
            tokens = tokens.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = crit(model(tokens), labels)
            if training:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.detach()
    return total / len(loader)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = ExtractorConfig()
    train_loader, val_loader = build_loaders(cfg)
    model = SentenceExtractor(cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        tr = run_epoch(model, train_loader, device, optimizer)
        va = run_epoch(model, val_loader, device)
        print(f"epoch {epoch}: train {tr.item():.4f} val {va.item():.4f}")


if __name__ == "__main__":
    main()
