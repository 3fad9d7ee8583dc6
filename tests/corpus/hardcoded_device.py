"""Written with a hard-coded CPU device and a GPU branch that was never tried."""

import torch
import torch.nn as nn

device = torch.device("cpu")
USE_GPU = False


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 1)
        self.offset = torch.tensor([0.5])

    def forward(self, x):
        return self.linear(x) + self.offset


def main():
    torch.manual_seed(0)
    model = Scorer().to(device)
    if USE_GPU:
        model = model.cuda()
    x = torch.randn(40, 5).to(device)
    y = torch.randn(40, 1).to(device)
    if USE_GPU:
        x, y = x.to("cuda:0"), y.to("cuda:0")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(20):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
