# source: https://github.com/PatrickHua/SimSiam/issues/24
# area: porting & distributed
# bug: SyncBatchNorm is combined with nn.DataParallel; with no process group it silently falls back to per-GPU BatchNorm, so projector statistics are never synchronised across GPUs
import torch
import torch.nn as nn
import torch.nn.functional as F


class ProjectionMLP(nn.Module):
    def __init__(self, in_dim, hidden=256, out_dim=256):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True))
        self.layer2 = nn.Sequential(nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True))
        self.layer3 = nn.Sequential(nn.Linear(hidden, out_dim), nn.BatchNorm1d(out_dim))

    def forward(self, x):
        return self.layer3(self.layer2(self.layer1(x)))


class PredictionMLP(nn.Module):
    def __init__(self, dim=256, hidden=64):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Linear(dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True))
        self.layer2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.layer2(self.layer1(x))


class SimSiam(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                      nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.projector = ProjectionMLP(64)
        self.encoder = nn.Sequential(self.backbone, self.projector)
        self.predictor = PredictionMLP()

    @staticmethod
    def neg_cosine(p, z):
        return -F.cosine_similarity(p, z.detach(), dim=-1).mean()

    def forward(self, x1, x2):
        z1, z2 = self.encoder(x1), self.encoder(x2)
        p1, p2 = self.predictor(z1), self.predictor(z2)
        return 0.5 * self.neg_cosine(p1, z2) + 0.5 * self.neg_cosine(p2, z1)


def augment(images):
    flipped = torch.where(torch.rand(images.size(0), 1, 1, 1, device=images.device) < 0.5,
                          images.flip(-1), images)
    return flipped + 0.1 * torch.randn_like(flipped)


def get_model(device):
    model = SimSiam()
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)  # expect[syncbn]: any
    model = model.to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)  # expect[syncbn]: any
    return model


def train(model, device, epochs=2, steps=4, batch_size=32):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    history = []
    for _ in range(epochs):
        model.train()
        epoch_loss = torch.zeros((), device=device)
        for _ in range(steps):
            images = torch.rand(batch_size, 3, 32, 32, device=device)
            loss = model(augment(images), augment(images)).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.detach()
        history.append(epoch_loss / steps)
    return torch.stack(history).tolist()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = get_model(device)
    print("loss per epoch:", [round(v, 4) for v in train(model, device)])


if __name__ == "__main__":
    main()
