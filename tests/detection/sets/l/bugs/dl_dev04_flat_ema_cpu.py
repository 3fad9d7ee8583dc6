# source: https://github.com/dptech-corp/Uni-Core/issues/42
# area: device placement
# bug: the flat fp32 EMA buffer is allocated with torch.zeros and no device, so it lives on the CPU while the flattened model parameters are on the GPU and `self.param - new_param` fails
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class FlatEMA:
    def __init__(self, model, decay=0.99):
        self.decay = decay
        self.names = [n for n, p in model.named_parameters() if p.requires_grad]
        params = dict(model.named_parameters())
        self.shapes = [params[n].shape for n in self.names]
        self.numels = [params[n].numel() for n in self.names]
        self.param = torch.zeros(sum(self.numels), dtype=torch.float32)  # expect: any
        self.param.copy_(self._flatten(model))

    def _flatten(self, model):
        params = dict(model.named_parameters())
        return torch.cat([params[n].detach().float().reshape(-1) for n in self.names])

    @torch.no_grad()
    def update(self, model):
        new_param = self._flatten(model)
        diff = self.param - new_param
        diff *= 1.0 - self.decay
        self.param -= diff

    @torch.no_grad()
    def copy_to(self, model):
        params = dict(model.named_parameters())
        chunks = torch.split(self.param, self.numels)
        for name, shape, chunk in zip(self.names, self.shapes, chunks):
            target = params[name]
            target.copy_(chunk.view(shape).to(dtype=target.dtype, device=target.device))


class SmallConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


@torch.no_grad()
def evaluate(model, images, labels):
    model.eval()
    preds = model(images).argmax(dim=1)
    return (preds == labels).float().mean()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallConvNet().to(device)
    eval_model = copy.deepcopy(model)
    ema = FlatEMA(model, decay=0.9)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    images = torch.randn(96, 3, 16, 16, device=device)
    labels = torch.randint(0, 10, (96,), device=device)
    for epoch in range(3):
        model.train()
        for start in range(0, images.size(0), 32):
            xb, yb = images[start:start + 32], labels[start:start + 32]
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            ema.update(model)
        eval_model.load_state_dict(model.state_dict())
        ema.copy_to(eval_model)
        acc = evaluate(eval_model, images, labels)
        print(f"epoch {epoch}: ema train-acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
