# source: https://github.com/yandexdataschool/Practical_RL/pull/170
# area: device placement
# bug: the decoder records its embedding's device in __init__ (the CPU) and builds the start tokens there after .to(device)
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
        self.device = self.emb.weight.device  # expect[dev]: TP119

    def forward(self, h, steps=5):
        token = torch.full((h.size(0),), self.bos, dtype=torch.long, device=self.device)  # expect[dev]: TP119
        outs = []
        for _ in range(steps):
            h = self.cell(self.emb(token), h)
            token = self.out(h).argmax(-1)
            outs.append(token)
        return torch.stack(outs, 1)


model = GreedyDecoder().to(device)
print(model(torch.zeros(3, 16, device=device)).shape)
