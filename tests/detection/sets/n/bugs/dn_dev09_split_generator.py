# source: https://github.com/pytorch/pytorch/issues/44714
# area: device placement
# bug: the seeded generator is created on the training device, but random_split draws its permutation on the CPU, so a CUDA generator breaks the split
from dataclasses import dataclass, field

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, random_split


@dataclass
class ExperimentConfig:
    seed: int = 42
    val_fraction: float = 0.2
    batch_size: int = 32
    seq_len: int = 50
    num_questions: int = 100
    hidden: int = 64
    device: torch.device = field(
        default_factory=lambda: torch.device("cuda" if torch.cuda.is_available() else "cpu"))


class InteractionDataset(Dataset):
    """Synthetic student-response sequences for knowledge tracing."""

    def __init__(self, n_students, cfg):
        g = torch.Generator().manual_seed(cfg.seed)
        self.questions = torch.randint(0, cfg.num_questions, (n_students, cfg.seq_len), generator=g)
        skill = torch.rand(n_students, 1, generator=g)
        difficulty = torch.rand(cfg.num_questions, generator=g)
        p = torch.sigmoid(4 * (skill - difficulty[self.questions]))
        self.responses = torch.bernoulli(p, generator=g).long()

    def __len__(self):
        return len(self.questions)

    def __getitem__(self, i):
        return self.questions[i], self.responses[i]


def make_splits(dataset, cfg):
    gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed)  # expect[w]: any
    n_val = int(len(dataset) * cfg.val_fraction)
    return random_split(dataset, [len(dataset) - n_val, n_val], generator=gen)  # expect[w]: any


class DKT(nn.Module):
    def __init__(self, num_q, hidden):
        super().__init__()
        self.num_q = num_q
        self.interaction_emb = nn.Embedding(2 * num_q, hidden)
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, num_q)

    def forward(self, q, r):
        h, _ = self.lstm(self.interaction_emb(q + self.num_q * r))
        return self.out(h)


def step_loss(model, q, r):
    logits = model(q[:, :-1], r[:, :-1])
    next_logit = logits.gather(-1, q[:, 1:, None]).squeeze(-1)
    return nn.functional.binary_cross_entropy_with_logits(next_logit, r[:, 1:].float())


def main():
    cfg = ExperimentConfig()
    torch.manual_seed(cfg.seed)
    train_set, val_set = make_splits(InteractionDataset(400, cfg), cfg)
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=cfg.batch_size)
    model = DKT(cfg.num_questions, cfg.hidden).to(cfg.device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        model.train()
        for q, r in train_loader:
            loss = step_loss(model, q.to(cfg.device), r.to(cfg.device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        val = torch.zeros((), device=cfg.device)
        with torch.no_grad():
            for q, r in val_loader:
                val += step_loss(model, q.to(cfg.device), r.to(cfg.device))
        print(f"epoch {epoch}: val bce {val.item() / len(val_loader):.4f}")


if __name__ == "__main__":
    main()
