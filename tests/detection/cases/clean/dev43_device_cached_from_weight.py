# twin of: bugs/dev43_device_cached_from_weight.py
# area: device placement
# correct: the start tokens are made on the device of the hidden state, read at call time
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GreedyDecoder(nn.Module):
    def __init__(self, vocab=20, dim=16, bos=1):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.cell = nn.GRUCell(dim, dim)
        self.out = nn.Linear(dim, vocab)
        self.bos = bos

    def forward(self, h, steps=5):
        token = torch.full((h.size(0),), self.bos, dtype=torch.long, device=h.device)
        outs = []
        for _ in range(steps):
            h = self.cell(self.emb(token), h)
            token = self.out(h).argmax(-1)
            outs.append(token)
        return torch.stack(outs, 1)


model = GreedyDecoder().to(device)
print(model(torch.zeros(3, 16, device=device)).shape)
