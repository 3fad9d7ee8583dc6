# source: https://github.com/NRCan/geo-deep-learning/issues/17
# area: transfer & sync
# bug: an evaluation helper copies each batch's outputs to the host as it goes
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def evaluate(model, loader):
    outputs = []
    with torch.no_grad():
        for x, _ in loader:
            out = model(x.to(device, non_blocking=True))
            outputs.append(out.data.cpu())  # expect: TP205
    return torch.cat(outputs)


model = nn.Linear(3, 3).to(device).eval()
data = TensorDataset(torch.randn(30, 3), torch.zeros(30))
print(evaluate(model, DataLoader(data, batch_size=6, pin_memory=torch.cuda.is_available())).shape)
