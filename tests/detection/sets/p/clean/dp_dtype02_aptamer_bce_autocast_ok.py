# twin of: bugs/dp_dtype02_aptamer_bce_autocast.py
# area: dtype
# correct: the head returns raw logits and the loss is BCEWithLogitsLoss, which autocast runs safely in float32
import torch
import torch.nn as nn
from dataclasses import dataclass

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class TrainConfig:
    apta_vocab: int = 64      # 3-mers of A/C/G/T
    prot_vocab: int = 400     # 2-mers of amino acids
    dim: int = 32
    epochs: int = 2
    lr: float = 3e-4
    use_amp: bool = device.type == "cuda"


class PairEncoder(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=2 * dim, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=1)

    def forward(self, tokens):
        return self.enc(self.emb(tokens)).mean(dim=1)


class AptaInteraction(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.apta = PairEncoder(cfg.apta_vocab, cfg.dim)
        self.prot = PairEncoder(cfg.prot_vocab, cfg.dim)
        self.fc = nn.Sequential(
            nn.Linear(2 * cfg.dim, cfg.dim), nn.GELU(),
            nn.Linear(cfg.dim, 1),
        )

    def forward(self, apta, prot):
        z = torch.cat([self.apta(apta), self.prot(prot)], dim=-1)
        return self.fc(z).squeeze(-1)


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = AptaInteraction(cfg).to(device)
        self.criterion = nn.BCEWithLogitsLoss()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=cfg.use_amp)

    def step(self, apta, prot, target):
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=self.cfg.use_amp):
            logits = self.model(apta, prot)
            loss = self.criterion(logits, target)
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        acc = ((logits.detach() > 0).float() == target).float().mean()
        return loss.detach(), acc

    def fit(self, loader):
        for epoch in range(self.cfg.epochs):
            total_loss = torch.zeros((), device=device)
            total_acc = torch.zeros((), device=device)
            for apta, prot, target in loader:
                apta, prot, target = apta.to(device), prot.to(device), target.to(device)
                loss, acc = self.step(apta, prot, target)
                total_loss += loss
                total_acc += acc
            n = len(loader)
            print(f"epoch {epoch}: loss={total_loss.item() / n:.4f} acc={total_acc.item() / n:.3f}")


def make_loader(cfg, n=48):
    apta = torch.randint(0, cfg.apta_vocab, (n, 24))
    prot = torch.randint(0, cfg.prot_vocab, (n, 40))
    target = torch.randint(0, 2, (n,)).float()
    ds = torch.utils.data.TensorDataset(apta, prot, target)
    return torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    cfg = TrainConfig()
    Trainer(cfg).fit(make_loader(cfg))
