# source: https://github.com/gc-os-ai/pyaptamer/issues/230
# area: AMP
# bug: the interaction head ends in nn.Sigmoid and the loss is nn.BCELoss evaluated inside the fp16 autocast region, which on a GPU raises "binary_cross_entropy and BCELoss are unsafe to autocast"
from dataclasses import dataclass

import torch
import torch.nn as nn

APTAMER_VOCAB = 5   # pad + A C G U
PROTEIN_VOCAB = 21  # pad + 20 amino acids


@dataclass
class FinetuneConfig:
    emb_dim: int = 32
    hidden: int = 64
    apt_len: int = 24
    prot_len: int = 48
    batch_size: int = 8
    n_pairs: int = 64
    epochs: int = 2
    lr: float = 3e-4


class SeqEncoder(nn.Module):
    def __init__(self, vocab, emb_dim, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb_dim, padding_idx=0)
        self.conv = nn.Conv1d(emb_dim, hidden, kernel_size=5, padding=2)

    def forward(self, tokens):
        h = torch.relu(self.conv(self.embed(tokens).transpose(1, 2)))
        return h.amax(dim=-1)


class AptaTransLite(nn.Module):
    def __init__(self, cfg: FinetuneConfig):
        super().__init__()
        self.apta_enc = SeqEncoder(APTAMER_VOCAB, cfg.emb_dim, cfg.hidden)
        self.prot_enc = SeqEncoder(PROTEIN_VOCAB, cfg.emb_dim, cfg.hidden)
        self.head = nn.Sequential(
            nn.Linear(2 * cfg.hidden, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, 1), nn.Sigmoid()
        )

    def forward(self, apt, prot):
        z = torch.cat([self.apta_enc(apt), self.prot_enc(prot)], dim=-1)
        return self.head(z).squeeze(-1)


class InteractionTrainer:
    def __init__(self, model, cfg, device):
        self.model = model.to(device)
        self.cfg = cfg
        self.device = device
        self.use_amp = device.type == "cuda"
        self.criterion = nn.BCELoss()  # expect[bce]: any
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def training_step(self, apt, prot, labels):
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            probs = self.model(apt, prot)
            loss = self.criterion(probs, labels)  # expect[bce]: any
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    def fit(self, loader):
        self.model.train()
        for epoch in range(self.cfg.epochs):
            total = torch.zeros((), device=self.device)
            for apt, prot, labels in loader:
                apt = apt.to(self.device, non_blocking=True)
                prot = prot.to(self.device, non_blocking=True)
                labels = labels.to(self.device, non_blocking=True)
                total += self.training_step(apt, prot, labels)
            print(f"epoch {epoch}: bce {(total / len(loader)).item():.4f}")


def synthetic_pairs(cfg: FinetuneConfig):
    apt = torch.randint(1, APTAMER_VOCAB, (cfg.n_pairs, cfg.apt_len))
    prot = torch.randint(1, PROTEIN_VOCAB, (cfg.n_pairs, cfg.prot_len))
    labels = (apt.eq(3).sum(1) > prot.eq(7).sum(1)).float()
    return torch.utils.data.TensorDataset(apt, prot, labels)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(7)
    cfg = FinetuneConfig()
    loader = torch.utils.data.DataLoader(
        synthetic_pairs(cfg), batch_size=cfg.batch_size, shuffle=True, pin_memory=device.type == "cuda"
    )
    InteractionTrainer(AptaTransLite(cfg), cfg, device).fit(loader)
