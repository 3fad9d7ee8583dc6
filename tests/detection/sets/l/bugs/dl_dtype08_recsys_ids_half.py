# source: https://github.com/huggingface/accelerate/issues/1405
# area: dtype
# bug: the whole interaction table (user id, item id, rating) is cast to the model dtype; in float16 on the GPU ids above 2048 are rounded, so .long() looks up the wrong users and items (or runs past the embedding table)
import numpy as np
import torch
import torch.nn as nn


class InteractionTable:
    """(user_id, item_id, rating) rows, as read from a ratings CSV into one numeric array."""

    def __init__(self, num_users=5000, num_items=12000, n=20000, seed=0):
        rng = np.random.default_rng(seed)
        users = rng.integers(0, num_users, n)
        items = rng.integers(0, num_items, n)
        ratings = np.clip(3.5 + 0.8 * rng.standard_normal(n), 1, 5)
        self.rows = np.stack([users, items, ratings], axis=1).astype(np.float32)
        self.num_users = num_users
        self.num_items = num_items

    def chunks(self, size):
        for i in range(0, len(self.rows), size):
            yield self.rows[i:i + size]


class NeuMF(nn.Module):
    def __init__(self, num_users, num_items, dim=16):
        super().__init__()
        self.user = nn.Embedding(num_users, dim)
        self.item = nn.Embedding(num_items, dim)
        self.user_bias = nn.Embedding(num_users, 1)
        self.item_bias = nn.Embedding(num_items, 1)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 32), nn.ReLU(), nn.Linear(32, 1))
        self.global_mean = nn.Parameter(torch.tensor(3.5))

    def forward(self, users, items):
        u, v = self.user(users), self.item(items)
        gmf = (u * v).sum(-1, keepdim=True)
        deep = self.mlp(torch.cat([u, v], dim=-1))
        out = self.global_mean + gmf + deep + self.user_bias(users) + self.item_bias(items)
        return out.squeeze(-1)


class RatingEvaluator:
    def __init__(self, model, device, half_on_gpu=True):
        self.device = device
        self.dtype = torch.float16 if (half_on_gpu and device.type == "cuda") else torch.float32
        self.model = model.to(device=device, dtype=self.dtype).eval()

    @torch.no_grad()
    def rmse(self, table, batch_size=4096):
        sq_err = torch.zeros((), device=self.device, dtype=torch.float32)
        count = 0
        for chunk in table.chunks(batch_size):
            batch = torch.from_numpy(chunk).to(self.device, dtype=self.dtype)  # expect: any
            users = batch[:, 0].long()
            items = batch[:, 1].long()
            target = batch[:, 2].float()
            pred = self.model(users, items).float().clamp(1, 5)
            sq_err += ((pred - target) ** 2).sum()
            count += chunk.shape[0]
        return (sq_err / count).sqrt().item()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    table = InteractionTable()
    model = NeuMF(table.num_users, table.num_items)
    evaluator = RatingEvaluator(model, device)
    print(f"validation RMSE: {evaluator.rmse(table):.4f}")


if __name__ == "__main__":
    main()
