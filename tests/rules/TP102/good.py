import torch
from torch import nn
from torch.utils.data import DataLoader


def train(dataset, device):
    loader = DataLoader(dataset, batch_size=32)
    model = nn.Linear(20, 2).to(device)
    for x, y in loader:
        x = x.to(device)
        out = model(x)
    probe = torch.zeros(1, 20, device=device)
    model(probe)
    cpu_model = nn.Linear(20, 2)
    return cpu_model(torch.zeros(1, 20))


def collated(dataset, device):
    loader = DataLoader(dataset, collate_fn=lambda b: [t.to(device) for t in b])
    model = nn.Linear(4, 3).to(device)
    for x, y in loader:
        out = model(x)  # the collate_fn moved the batch


@torch.no_grad()
def sample(prompt, steps, device):
    model = nn.Embedding(10, 10).to(device)
    logits = model(prompt.to(device))
    for _ in range(steps):
        nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1)  # on the device of the probs
        logits = model(nxt)

