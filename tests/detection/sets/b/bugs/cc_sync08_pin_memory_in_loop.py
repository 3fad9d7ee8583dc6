# source: https://discuss.pytorch.org/t/how-is-explicit-pin-memory-different-from-just-calling-to-and-let-cuda-handle-it/197422
# area: transfer & sync
# bug: the batch-moving helper calls .pin_memory() on the main thread for every tensor of every batch (an extra blocking host copy + page-locked allocation per step) instead of letting the DataLoader pin in its background thread
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TabularDataset(Dataset):
    def __init__(self, n=400, n_num=10, n_cat=3):
        self.num = torch.randn(n, n_num)
        self.cat = torch.randint(0, 6, (n, n_cat))
        self.target = (self.num[:, 0] > 0).float()

    def __len__(self):
        return len(self.target)

    def __getitem__(self, i):
        return {"num": self.num[i], "cat": self.cat[i], "target": self.target[i]}


class TabNet(nn.Module):
    def __init__(self, n_num=10, n_cat=3, card=6, emb=4):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(card, emb) for _ in range(n_cat))
        self.mlp = nn.Sequential(nn.Linear(n_num + n_cat * emb, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, num, cat):
        e = [m(cat[:, j]) for j, m in enumerate(self.embs)]
        return self.mlp(torch.cat([num] + e, dim=1)).squeeze(-1)


def move_batch(batch):
    if device.type == "cuda":
        return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}  # expect: any
    return {k: v.to(device) for k, v in batch.items()}


def main():
    loader = DataLoader(TabularDataset(), batch_size=32, shuffle=True)
    model = TabNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    for epoch in range(3):
        running = torch.zeros((), device=device)
        for batch in loader:
            batch = move_batch(batch)
            loss = loss_fn(model(batch["num"], batch["cat"]), batch["target"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            running += loss.detach()
        print(f"epoch {epoch} bce {running.item() / len(loader):.4f}")


if __name__ == "__main__":
    main()
