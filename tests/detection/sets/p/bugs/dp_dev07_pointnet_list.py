# source: https://github.com/pytorch/pytorch/issues/131861
# area: device placement
# bug: the T-Net's shared MLP layers are kept in a plain Python list, so model.to(device) leaves them on the CPU
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn_relu(c_in, c_out):
    return [nn.Conv1d(c_in, c_out, 1), nn.BatchNorm1d(c_out), nn.ReLU()]


class TNet(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
        layers = []
        for c_in, c_out in [(k, 32), (32, 64), (64, 128)]:
            layers += conv_bn_relu(c_in, c_out)
        self.shared_mlp = layers  # expect: any
        self.fc1 = nn.Linear(128, 64)
        self.fc2 = nn.Linear(64, k * k)
        nn.init.zeros_(self.fc2.weight)
        nn.init.zeros_(self.fc2.bias)

    def forward(self, x):
        for layer in self.shared_mlp:
            x = layer(x)
        x = torch.amax(x, dim=2)
        x = self.fc2(F.relu(self.fc1(x)))
        identity = torch.eye(self.k, device=x.device).flatten()
        return (x + identity).view(-1, self.k, self.k)


class PointNetCls(nn.Module):
    def __init__(self, n_classes=8):
        super().__init__()
        self.input_tnet = TNet(3)
        self.feat = nn.Sequential(
            nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
        )
        self.head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, n_classes))

    def forward(self, pts):
        trans = self.input_tnet(pts)
        pts = torch.bmm(trans, pts)
        x = torch.amax(self.feat(pts), dim=2)
        return self.head(x), trans


def orthogonality_reg(trans):
    eye = torch.eye(trans.shape[1], device=trans.device)
    return ((trans @ trans.transpose(1, 2)) - eye).pow(2).sum(dim=(1, 2)).mean()


def synthetic_shapes(n, n_points, n_classes, device):
    labels = torch.randint(0, n_classes, (n,), device=device)
    scale = (labels.float() + 1).view(-1, 1, 1) / n_classes
    pts = torch.randn(n, 3, n_points, device=device) * scale
    return pts, labels


def train(model, device, epochs=3, n_classes=8):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    epoch_losses = []
    for epoch in range(epochs):
        model.train()
        total = torch.zeros((), device=device)
        for _ in range(5):
            pts, labels = synthetic_shapes(16, 64, n_classes, device)
            logits, trans = model(pts)
            loss = F.cross_entropy(logits, labels) + 1e-3 * orthogonality_reg(trans)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        epoch_losses.append(total / 5)
    return torch.stack(epoch_losses)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = PointNetCls().to(device)
    losses = train(model, device)
    print("epoch losses:", [round(v, 4) for v in losses.tolist()])
