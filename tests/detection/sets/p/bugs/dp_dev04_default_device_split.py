# source: https://github.com/hcnoh/knowledge-tracing-collection-pytorch/issues/1
# area: device placement
# bug: with the default device switched to CUDA, random_split and the shuffling sampler draw randperm on CUDA with the CPU default generator
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, random_split

if torch.cuda.is_available():
    torch.set_default_device("cuda")  # expect[g]: any


class ResponseSequences(Dataset):
    def __init__(self, num_q=20, n_students=200, seq_len=30, seed=0):
        rng = np.random.default_rng(seed)
        skill = rng.normal(size=(n_students, 1))
        difficulty = rng.normal(size=(1, num_q))
        q = rng.integers(0, num_q, size=(n_students, seq_len))
        p = 1 / (1 + np.exp(-(skill - difficulty[0, q])))
        r = (rng.random((n_students, seq_len)) < p).astype(np.int64)
        self.num_q = num_q
        self.q = torch.tensor(q)
        self.r = torch.tensor(r)

    def __len__(self):
        return len(self.q)

    def __getitem__(self, i):
        return self.q[i], self.r[i]


class DKT(nn.Module):
    def __init__(self, num_q, emb_size=32, hidden_size=32):
        super().__init__()
        self.num_q = num_q
        self.interaction_emb = nn.Embedding(num_q * 2, emb_size)
        self.lstm = nn.LSTM(emb_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, num_q)

    def forward(self, q, r):
        x = self.interaction_emb(q + self.num_q * r)
        h, _ = self.lstm(x)
        return torch.sigmoid(self.out(h))


def step_loss(model, q, r):
    y = model(q[:, :-1], r[:, :-1])
    y = torch.gather(y, 2, q[:, 1:, None]).squeeze(-1)
    return nn.functional.binary_cross_entropy(y, r[:, 1:].float())


def train_model(model, dataset, train_ratio=0.9, batch_size=32, epochs=3, lr=1e-3):
    train_size = int(len(dataset) * train_ratio)
    test_size = len(dataset) - train_size
    train_set, test_set = random_split(dataset, [train_size, test_size])  # expect[g]: any
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True)  # expect[g]: any
    test_loader = DataLoader(test_set, batch_size=test_size)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for epoch in range(epochs):
        model.train()
        for q, r in train_loader:
            loss = step_loss(model, q, r)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            test_loss = torch.stack([step_loss(model, q, r) for q, r in test_loader]).mean()
        history.append(test_loss)
    return torch.stack(history)


if __name__ == "__main__":
    torch.manual_seed(0)
    data = ResponseSequences()
    model = DKT(data.num_q)
    hist = train_model(model, data)
    print("test BCE per epoch:", [round(v, 4) for v in hist.tolist()])
