import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(8, 4)
x.to(device)
w = torch.ones(4)
w.cuda()
w.float()


def train_epoch(model, loader):
    for images, targets in loader:
        images.to("cuda")
        model(images, targets)


def step(model, inputs, labels):
    inputs.to(device)
    labels.to(device)
    return model(inputs), labels


model = torch.nn.Linear(4, 2).to(device)
step(model, torch.randn(2, 4), torch.zeros(2))
