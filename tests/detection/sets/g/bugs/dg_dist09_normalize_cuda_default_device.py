# source: https://github.com/RobustBench/robustbench/issues/58
# area: porting & distributed
# bug: the normalisation constants are moved with a bare .cuda(), which targets the current device (cuda:0), so a model evaluated on cuda:1..N mixes devices
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2471, 0.2435, 0.2616)


class PreActBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)

    def forward(self, x):
        out = self.conv1(F.relu(self.bn1(x)))
        return x + self.conv2(F.relu(self.bn2(out)))


class DMPreActResNet(nn.Module):
    def __init__(self, num_classes=10, width=32, mean=CIFAR10_MEAN, std=CIFAR10_STD):
        super().__init__()
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)
        self.std = torch.tensor(std).view(1, 3, 1, 1)
        self.mean_cuda = None
        self.std_cuda = None
        self.stem = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.blocks = nn.Sequential(PreActBlock(width), PreActBlock(width))
        self.bn = nn.BatchNorm2d(width)
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x):
        if x.is_cuda:
            if self.mean_cuda is None:
                self.mean_cuda = self.mean.cuda()  # expect[norm]: any
                self.std_cuda = self.std.cuda()  # expect[norm]: any
            out = (x - self.mean_cuda) / self.std_cuda
        else:
            out = (x - self.mean) / self.std
        out = self.blocks(self.stem(out))
        out = F.adaptive_avg_pool2d(F.relu(self.bn(out)), 1).flatten(1)
        return self.fc(out)


def fgsm(model, x, y, eps):
    x = x.clone().requires_grad_(True)
    loss = F.cross_entropy(model(x), y)
    grad, = torch.autograd.grad(loss, x)
    return (x + eps * grad.sign()).clamp(0, 1).detach()


def clean_and_robust_accuracy(model, images, labels, device, batch_size=50, eps=8 / 255):
    clean = torch.zeros((), dtype=torch.long, device=device)
    robust = torch.zeros((), dtype=torch.long, device=device)
    for start in range(0, images.size(0), batch_size):
        x = images[start:start + batch_size].to(device)
        y = labels[start:start + batch_size].to(device)
        with torch.no_grad():
            clean += (model(x).argmax(1) == y).sum()
        x_adv = fgsm(model, x, y, eps)
        with torch.no_grad():
            robust += (model(x_adv).argmax(1) == y).sum()
    return clean.item() / images.size(0), robust.item() / images.size(0)


def pick_device():
    if not torch.cuda.is_available():
        return torch.device("cpu")
    gpu = int(os.environ.get("EVAL_GPU", torch.cuda.device_count() - 1))
    return torch.device("cuda", gpu)


def main():
    torch.manual_seed(0)
    device = pick_device()
    model = DMPreActResNet().to(device).eval()
    images = torch.rand(200, 3, 32, 32)
    labels = torch.randint(0, 10, (200,))
    clean_acc, robust_acc = clean_and_robust_accuracy(model, images, labels, device)
    print(f"device={device} clean={clean_acc:.3f} robust={robust_acc:.3f}")


if __name__ == "__main__":
    main()
