# source: https://github.com/mahmoodlab/MIL-Lab/issues/4
# area: device placement
# bug: inputs are moved to the device but the labels are not; the loss mixes devices
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    data = TensorDataset(torch.randn(48, 6), torch.randint(0, 2, (48,)))
    loader = DataLoader(data, batch_size=12, pin_memory=torch.cuda.is_available())
    model = nn.Linear(6, 2).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        logits = model(x)
        loss = criterion(logits, y)  # expect: TP102, TP150
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
