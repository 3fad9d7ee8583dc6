# source: https://github.com/sacdallago/biotrainer/issues/67
# area: device placement
# bug: class weights computed from the labels go into a loss that is never moved, and the loss is used in a train function
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(96, 10)
labels = torch.cat([torch.zeros(70), torch.ones(20), torch.full((6,), 2.0)]).long()


def class_weights(labels, n):
    counts = torch.bincount(labels, minlength=n).float()
    return counts.sum() / (n * counts)


def train(model, batches, criterion, opt):
    for x, y in batches:
        loss = criterion(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


model = nn.Linear(10, 3).to(device)
criterion = nn.CrossEntropyLoss(weight=class_weights(labels, 3))  # expect: any
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
batches = list(zip(features.split(32), labels.split(32)))
for epoch in range(2):
    print(f"epoch {epoch} loss {train(model, batches, criterion, opt):.3f}")
