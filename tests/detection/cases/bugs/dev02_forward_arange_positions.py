# source: https://github.com/rotem-shalev/Ham2Pose/pull/6
# area: device placement
# bug: position ids from torch.arange in forward are on the CPU and index a GPU embedding
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyEncoder(nn.Module):
    def __init__(self, vocab=20, dim=16, max_len=32):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])  # expect[pos]: TP103
        h = self.tokens(ids) + self.positions(pos)  # expect[pos]: TP150
        return self.head(h)


def main():
    torch.manual_seed(0)
    model = TinyEncoder().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    for _ in range(3):
        ids = torch.randint(0, 20, (4, 10), device=device)
        logits = model(ids)
        loss = criterion(logits.reshape(-1, 20), ids.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
