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
