# twin of: bugs/dev42_cpu_generator_uniform_init.py
# area: device placement
# correct: the generator is made on the device the table is filled on
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def init_embedding(rows, cols, scale, generator):
    table = torch.zeros(rows, cols, device=device)
    table.uniform_(-scale, scale, generator=generator)
    return table


generator = torch.Generator(device=device).manual_seed(123)
emb = nn.Embedding(50, 8).to(device)
with torch.no_grad():
    emb.weight.copy_(init_embedding(50, 8, 0.1, generator))
tokens = torch.randint(0, 50, (4, 6), device=device)
print("mean", round(emb(tokens).mean().item(), 4))
