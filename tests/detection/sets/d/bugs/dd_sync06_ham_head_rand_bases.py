# source: https://github.com/open-mmlab/mmsegmentation/issues/3231
# area: transfer & sync
# bug: the NMF bases are drawn with torch.rand on the CPU and copied to the GPU on every forward pass instead of being created on the device
import torch
import torch.nn as nn
import torch.nn.functional as F


class NMF2D(nn.Module):
    """Matrix decomposition block of a Hamburger decode head (non-negative matrix factorization)."""

    def __init__(self, steps=6, rank=16, groups=1, inv_t=1.0):
        super().__init__()
        self.steps = steps
        self.rank = rank
        self.groups = groups
        self.inv_t = inv_t

    def local_step(self, x, bases, coef):
        numerator = torch.bmm(x.transpose(1, 2), bases)
        denominator = coef.bmm(bases.transpose(1, 2).bmm(bases))
        coef = coef * numerator / (denominator + 1e-6)
        numerator = torch.bmm(x, coef)
        denominator = bases.bmm(coef.transpose(1, 2).bmm(coef))
        bases = bases * numerator / (denominator + 1e-6)
        return bases, coef

    def forward(self, x):
        b, c, h, w = x.shape
        d = c // self.groups
        n = h * w
        x = x.view(b * self.groups, d, n)
        bases = torch.rand((b * self.groups, d, self.rank)).to(x.device)  # expect: any
        bases = F.normalize(bases, dim=1)
        with torch.no_grad():
            coef = torch.softmax(self.inv_t * torch.bmm(x.transpose(1, 2), bases), dim=-1)
            for _ in range(self.steps):
                bases, coef = self.local_step(x, bases, coef)
        numerator = torch.bmm(x.transpose(1, 2), bases)
        denominator = coef.bmm(bases.transpose(1, 2).bmm(bases))
        coef = coef * numerator / (denominator + 1e-6)
        return torch.bmm(bases, coef.transpose(1, 2)).view(b, c, h, w)


class LightHamHead(nn.Module):
    def __init__(self, in_channels=64, ham_channels=64, num_classes=5):
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(in_channels, ham_channels, 1), nn.ReLU())
        self.ham_in = nn.Conv2d(ham_channels, ham_channels, 1)
        self.nmf = NMF2D()
        self.ham_out = nn.Sequential(nn.Conv2d(ham_channels, ham_channels, 1, bias=False), nn.BatchNorm2d(ham_channels))
        self.cls_seg = nn.Conv2d(ham_channels, num_classes, 1)

    def forward(self, feats):
        x = self.squeeze(feats)
        enjoy = F.relu(self.ham_in(x))
        enjoy = self.ham_out(self.nmf(enjoy))
        return self.cls_seg(F.relu(x + enjoy))


class TinySegmentor(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.decode_head = LightHamHead(num_classes=num_classes)

    def forward(self, img):
        logits = self.decode_head(self.backbone(img))
        return F.interpolate(logits, size=img.shape[-2:], mode="bilinear", align_corners=False)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinySegmentor().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    images = torch.randn(16, 3, 48, 48, device=device)
    masks = torch.randint(0, 5, (16, 48, 48), device=device)
    for it in range(4):
        idx = torch.randint(0, 16, (4,), device=device)
        loss = F.cross_entropy(model(images[idx]), masks[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("final loss", round(loss.item(), 4))
