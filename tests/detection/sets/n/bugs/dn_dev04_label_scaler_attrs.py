# source: https://github.com/seyonechithrananda/bert-loves-chemistry/pull/15
# area: device placement
# bug: label mean/std are plain tensor attributes of the regression model, so model.to(device) leaves them on the CPU while labels and logits are on the GPU
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class RegressionHeadConfig:
    def __init__(self, hidden_size=64, num_tasks=3, dropout=0.1, norm_mean=None, norm_std=None):
        self.hidden_size = hidden_size
        self.num_tasks = num_tasks
        self.dropout = dropout
        self.norm_mean = norm_mean if norm_mean is not None else [0.0] * num_tasks
        self.norm_std = norm_std if norm_std is not None else [1.0] * num_tasks


class SmilesRegressor(nn.Module):
    def __init__(self, vocab_size, config):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, config.hidden_size, padding_idx=0)
        self.encoder = nn.GRU(config.hidden_size, config.hidden_size, batch_first=True)
        self.dropout = nn.Dropout(config.dropout)
        self.regressor = nn.Linear(config.hidden_size, config.num_tasks)
        self.norm_mean = torch.tensor(config.norm_mean, dtype=torch.float32)  # expect[w]: any
        self.norm_std = torch.tensor(config.norm_std, dtype=torch.float32)  # expect[w]: any
        self.loss_fct = nn.MSELoss()

    def forward(self, input_ids, labels=None):
        _, h = self.encoder(self.embed(input_ids))
        logits = self.regressor(self.dropout(h[-1]))
        if labels is None:
            return logits * self.norm_std + self.norm_mean
        normalized = (labels - self.norm_mean) / self.norm_std  # expect[w]: any
        return self.loss_fct(logits, normalized), logits


def compute_label_stats(labels):
    std = labels.std(axis=0)
    std[std == 0] = 1.0
    return labels.mean(axis=0).tolist(), std.tolist()


def make_dataset(n=256, seq_len=24, vocab=40, num_tasks=3, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(n, seq_len))
    labels = np.stack([ids.mean(1) * 2.0 + 5.0, ids.std(1), (ids > 20).mean(1) * 100.0], axis=1)
    return ids, labels[:, :num_tasks].astype(np.float32)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ids, labels = make_dataset()
    mean, std = compute_label_stats(labels)
    config = RegressionHeadConfig(num_tasks=labels.shape[1], norm_mean=mean, norm_std=std)
    model = SmilesRegressor(vocab_size=40, config=config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    ds = TensorDataset(torch.from_numpy(ids), torch.from_numpy(labels))
    loader = DataLoader(ds, batch_size=32, shuffle=True)
    for epoch in range(2):
        model.train()
        running = torch.zeros((), device=device)
        for input_ids, y in loader:
            input_ids, y = input_ids.to(device), y.to(device)
            loss, _ = model(input_ids, labels=y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.detach()
        print(f"epoch {epoch}: normalized mse {running.item() / len(loader):.4f}")
    model.eval()
    with torch.no_grad():
        preds = model(torch.from_numpy(ids[:4]).to(device))
    print(preds.cpu().numpy().round(2))


if __name__ == "__main__":
    main()
