# source: https://duoke360.com/post/34766
# area: device placement
# bug: every batch is moved to the GPU but the model never is
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    data = TensorDataset(torch.randn(32, 3, 8, 8), torch.randint(0, 2, (32,)))
    loader = DataLoader(data, batch_size=8, pin_memory=torch.cuda.is_available())
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))  # expect[m]: any
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = criterion(model(x), y)  # expect[m]: TP150
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


main()
