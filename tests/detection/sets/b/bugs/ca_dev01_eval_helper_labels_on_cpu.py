# source: https://github.com/HoyTta0/KnowledgeDistillation/issues/10
# area: device placement
# bug: teacher_evaluate moves the token ids to the GPU but never the labels, so cross_entropy/accuracy mix cuda logits with cpu targets
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Config:
    vocab = 200
    seq_len = 16
    num_classes = 4
    batch_size = 16
    lr = 1e-3
    epochs = 2
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TeacherNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg.vocab, 64)
        self.enc = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
        self.cls = nn.Linear(64, cfg.num_classes)

    def forward(self, ids):
        h = self.emb(ids).mean(dim=1)
        return self.cls(self.enc(h))


def make_loader(cfg, n, shuffle):
    ids = torch.randint(0, cfg.vocab, (n, cfg.seq_len))
    labels = torch.randint(0, cfg.num_classes, (n,))
    return DataLoader(TensorDataset(ids, labels), batch_size=cfg.batch_size, shuffle=shuffle)


def teacher_train(cfg, model, loader, optimizer):
    model.train()
    for ids, labels in loader:
        ids, labels = ids.to(cfg.device), labels.to(cfg.device)
        loss = F.cross_entropy(model(ids), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@torch.no_grad()
def teacher_evaluate(cfg, model, loader):
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    for ids, labels in loader:
        ids = ids.to(cfg.device)
        outputs = model(ids)
        total_loss += F.cross_entropy(outputs, labels, reduction="sum").item()  # expect[labels]: any
        correct += (outputs.argmax(dim=1) == labels).sum().item()  # expect[labels]: any
        seen += labels.size(0)
    return total_loss / seen, correct / seen


def main():
    cfg = Config()
    model = TeacherNet(cfg).to(cfg.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    train_loader = make_loader(cfg, 128, shuffle=True)
    dev_loader = make_loader(cfg, 48, shuffle=False)
    for epoch in range(cfg.epochs):
        teacher_train(cfg, model, train_loader, optimizer)
        loss, acc = teacher_evaluate(cfg, model, dev_loader)
        print(f"epoch {epoch}: dev loss {loss:.4f} acc {acc:.3f}")


if __name__ == "__main__":
    main()
