"""Older device-aware code: args.cuda from a flag, .cuda() calls guarded by it, the
deprecated torch.cuda.amp autocast and GradScaler, and torch.cuda.manual_seed."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true", default=False)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

torch.manual_seed(args.seed)
if args.cuda:
    torch.cuda.manual_seed(args.seed)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


g = torch.Generator().manual_seed(args.seed)
data = torch.randn(150, 8, generator=g)
target = (data[:, 0] > 0).long() + (data[:, 1] > 0.5).long()
model = Net()
if args.cuda:
    model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
scaler = torch.cuda.amp.GradScaler(enabled=args.cuda)

for epoch in range(args.epochs):
    for i in range(0, len(data), 30):
        x, y = data[i : i + 30], target[i : i + 30]
        if args.cuda:
            x, y = x.cuda(), y.cuda()
        optimizer.zero_grad()
        with torch.cuda.amp.autocast(enabled=args.cuda):
            output = model(x)
            loss = F.cross_entropy(output, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(f"epoch {epoch} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    x, y = data, target
    if args.cuda:
        x, y = x.cuda(), y.cuda()
    final = F.cross_entropy(model(x), y)
print(f"final loss {final.item():.8f}")
