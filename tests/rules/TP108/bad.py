import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
x = torch.randn(3, 4).to(device)
preds = model(x).argmax(1).numpy()
arr = x.detach().numpy()


def f1_score(predictions, labels):
    predictions = predictions.numpy()  # handed the model's device output below
    return (predictions == labels).mean()


score = f1_score(model(x).argmax(1), torch.zeros(3).numpy())
