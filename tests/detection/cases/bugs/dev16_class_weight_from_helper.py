# source: https://github.com/mahmoodlab/MIL-Lab/issues/4
# area: device placement
# bug: a helper computes inverse-frequency class weights on the CPU; the loss then runs on the GPU
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def class_weights(labels, n_classes):
    counts = torch.bincount(labels, minlength=n_classes).float()
    return counts.sum() / (n_classes * counts.clamp(min=1))  # expect[w]: any


def main():
    labels = torch.randint(0, 3, (60,))
    features = torch.randn(60, 5)
    model = nn.Linear(5, 3).to(device)
    criterion = nn.CrossEntropyLoss(weight=class_weights(labels, 3))  # expect[w]: any
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(0, 60, 20):
        x = features[i : i + 20].to(device)
        y = labels[i : i + 20].to(device)
        loss = criterion(model(x), y)  # expect[w]: TP150
        opt.zero_grad()
        loss.backward()
        opt.step()


main()
