# source: https://github.com/pytorch/pytorch/issues/15867
# area: device placement
# bug: the seeded generator from torch.manual_seed is the CPU one; uniform_ on a device tensor with it fails on CUDA
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def init_embedding(rows, cols, scale, generator):
    table = torch.zeros(rows, cols, device=device)
    table.uniform_(-scale, scale, generator=generator)  # expect[gen]: TP118
    return table


generator = torch.manual_seed(123)  # expect[gen]: TP118
emb = nn.Embedding(50, 8).to(device)
with torch.no_grad():
    emb.weight.copy_(init_embedding(50, 8, 0.1, generator))
tokens = torch.randint(0, 50, (4, 6), device=device)
print("mean", round(emb(tokens).mean().item(), 4))
