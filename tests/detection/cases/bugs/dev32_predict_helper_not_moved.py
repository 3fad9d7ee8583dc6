# source: https://github.com/THUwangcy/ReChorus/issues/12
# area: device placement
# bug: a predict() helper feeds raw CPU features to the model that main() moved to the GPU
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def predict(model, features):
    model.eval()
    with torch.no_grad():
        return model(features).argmax(dim=1)  # expect[p]: TP150


def main():
    model = nn.Sequential(nn.Linear(9, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    samples = torch.randn(5, 9)
    print(predict(model, samples))  # expect[p]: any


main()
