# source: https://github.com/CodefyUI/CodefyUI/pull/435
# area: transfer & sync
# bug: the training loop and the evaluator call .item() on every batch, forcing a GPU->host sync per step instead of accumulating on the device
import torch
import torch.nn as nn
from dataclasses import dataclass
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class LoopConfig:
    epochs: int = 2
    batch_size: int = 64
    lr: float = 1e-3
    vocab: int = 500
    seq_len: int = 32
    embed_dim: int = 64
    num_classes: int = 4


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab, dim, num_classes):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, num_classes))

    def forward(self, tokens):
        return self.head(self.emb(tokens))


def make_loaders(cfg, use_cuda):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, cfg.vocab, (1024, cfg.seq_len), generator=g)
    y = torch.randint(0, cfg.num_classes, (1024,), generator=g)
    train = TensorDataset(x[:768], y[:768])
    val = TensorDataset(x[768:], y[768:])
    kw = dict(batch_size=cfg.batch_size, pin_memory=use_cuda)
    return DataLoader(train, shuffle=True, **kw), DataLoader(val, **kw)


class TrainingLoop:
    def __init__(self, model, cfg, device):
        self.model = model.to(device)
        self.cfg = cfg
        self.device = device
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.criterion = nn.CrossEntropyLoss()
        self.history = []

    def _move(self, tokens, labels):
        return (tokens.to(self.device, non_blocking=True),
                labels.to(self.device, non_blocking=True))

    def train_epoch(self, loader):
        self.model.train()
        running, batches = 0.0, 0
        for tokens, labels in loader:
            tokens, labels = self._move(tokens, labels)
            self.opt.zero_grad(set_to_none=True)
            loss = self.criterion(self.model(tokens), labels)
            loss.backward()
            self.opt.step()
            running += loss.item()  # expect[w]: any
            batches += 1
        return running / max(batches, 1)

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        total_loss, correct, seen = 0.0, 0, 0
        for tokens, labels in loader:
            tokens, labels = self._move(tokens, labels)
            logits = self.model(tokens)
            total_loss += self.criterion(logits, labels).item() * labels.numel()  # expect[w]: any
            correct += (logits.argmax(-1) == labels).sum().item()  # expect[w]: any
            seen += labels.numel()
        return total_loss / seen, correct / seen

    def fit(self, train_loader, val_loader):
        for epoch in range(self.cfg.epochs):
            train_loss = self.train_epoch(train_loader)
            val_loss, val_acc = self.evaluate(val_loader)
            self.history.append((train_loss, val_loss, val_acc))
            print(f"epoch {epoch}: train {train_loss:.4f} val {val_loss:.4f} acc {val_acc:.3f}")
        return self.history


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    cfg = LoopConfig()
    train_loader, val_loader = make_loaders(cfg, device.type == "cuda")
    model = BagOfEmbeddings(cfg.vocab, cfg.embed_dim, cfg.num_classes)
    TrainingLoop(model, cfg, device).fit(train_loader, val_loader)


if __name__ == "__main__":
    main()
