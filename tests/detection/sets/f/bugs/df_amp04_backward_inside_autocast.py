# source: https://discuss.pytorch.org/t/torch-autocasts-gradient/169003
# area: AMP
# bug: the scaled backward pass is issued inside the autocast region, so on a GPU the backward ops run under autocast instead of mirroring the forward dtypes
import torch
import torch.nn as nn
import torch.nn.functional as F


class TwoTowerRanker(nn.Module):
    def __init__(self, n_users=200, n_items=500, dim=32):
        super().__init__()
        self.user_emb = nn.Embedding(n_users, dim)
        self.item_emb = nn.Embedding(n_items, dim)
        self.user_tower = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, dim))
        self.item_tower = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, dim))

    def forward(self, users, pos_items, neg_items):
        u = F.normalize(self.user_tower(self.user_emb(users)), dim=-1)
        p = F.normalize(self.item_tower(self.item_emb(pos_items)), dim=-1)
        n = F.normalize(self.item_tower(self.item_emb(neg_items)), dim=-1)
        return (u * p).sum(-1), (u * n).sum(-1)


def bpr_loss(pos_scores, neg_scores):
    return -F.logsigmoid(pos_scores - neg_scores).mean()


class InteractionSampler:
    def __init__(self, n_users=200, n_items=500, n_pairs=2048, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.users = torch.randint(0, n_users, (n_pairs,), generator=g)
        self.items = torch.randint(0, n_items, (n_pairs,), generator=g)
        self.n_items = n_items

    def batches(self, batch_size, device):
        perm = torch.randperm(len(self.users))
        for i in range(0, len(perm), batch_size):
            idx = perm[i:i + batch_size]
            neg = torch.randint(0, self.n_items, (len(idx),))
            yield self.users[idx].to(device), self.items[idx].to(device), neg.to(device)


def train_epoch(model, sampler, optimizer, scaler, device, use_amp, batch_size=256):
    model.train()
    total = torch.zeros((), device=device)
    steps = 0
    for users, pos, neg in sampler.batches(batch_size, device):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            pos_s, neg_s = model(users, pos, neg)
            loss = bpr_loss(pos_s, neg_s)
            scaler.scale(loss).backward()  # expect: any
        scaler.step(optimizer)
        scaler.update()
        total += loss.detach()
        steps += 1
    return total / steps


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = TwoTowerRanker().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    sampler = InteractionSampler()
    for epoch in range(3):
        avg = train_epoch(model, sampler, optimizer, scaler, device, use_amp)
        print(f"epoch {epoch}: bpr {avg.item():.4f}")


if __name__ == "__main__":
    main()
