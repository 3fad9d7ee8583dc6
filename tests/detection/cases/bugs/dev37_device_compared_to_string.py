# source: https://github.com/Lightning-AI/pytorch-lightning/issues/264
# area: device placement
# bug: `x.device == torch.device("cuda")` is never true for cuda:0, so the input is never moved
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(2, 2).to(device)
weight = next(model.parameters())


def prepare(x):
    if weight.device == torch.device("cuda"):  # expect[c]: TP111
        return x.to(weight.device)
    return x


out = model(prepare(torch.randn(3, 2)))  # expect[c]: TP150
print(out.shape)
