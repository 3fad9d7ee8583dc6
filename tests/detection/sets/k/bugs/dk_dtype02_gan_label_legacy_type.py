# source: https://github.com/elvisyjlin/SpatialAttentionGAN/issues/1
# area: dtype
# bug: target attribute labels are cast with .type(torch.FloatTensor) after .to(device), which moves them back to the CPU; torch.cat with the CUDA image fails
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

N_ATTRS = 5
IMG = 16


def tile_attributes(attrs, h, w):
    return attrs.view(attrs.size(0), -1, 1, 1).expand(-1, -1, h, w)


class AttentionGenerator(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3 + N_ATTRS, ch, 3, padding=1), nn.InstanceNorm2d(ch), nn.ReLU(True),
            nn.Conv2d(ch, ch, 3, padding=1), nn.InstanceNorm2d(ch), nn.ReLU(True),
        )
        self.to_rgb = nn.Conv2d(ch, 3, 3, padding=1)
        self.to_mask = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, x, attrs):
        a = tile_attributes(attrs, x.size(2), x.size(3))
        h = self.body(torch.cat((x, a), dim=1))
        mask = torch.sigmoid(self.to_mask(h))
        return mask * torch.tanh(self.to_rgb(h)) + (1 - mask) * x, mask


class Discriminator(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.feat = nn.Sequential(
            nn.Conv2d(3, ch, 4, 2, 1), nn.LeakyReLU(0.2, True),
            nn.Conv2d(ch, ch * 2, 4, 2, 1), nn.LeakyReLU(0.2, True),
        )
        self.adv = nn.Conv2d(ch * 2, 1, 3, padding=1)
        self.cls = nn.Linear(ch * 2, N_ATTRS)

    def forward(self, x):
        h = self.feat(x)
        return self.adv(h).mean(dim=(1, 2, 3)), self.cls(h.mean(dim=(2, 3)))


def build_loader():
    images = torch.rand(48, 3, IMG, IMG) * 2 - 1
    attrs = torch.randint(0, 2, (48, N_ATTRS))
    return DataLoader(TensorDataset(images, attrs), batch_size=16, shuffle=True, drop_last=True)


def train(epochs=2):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    G, D = AttentionGenerator().to(device), Discriminator().to(device)
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for epoch in range(epochs):
        for reals, labels in build_loader():
            reals = reals.to(device)
            real_labels = labels.to(device).float()
            target_labels = labels[torch.randperm(labels.size(0))]
            target_labels = target_labels.to(device).type(torch.FloatTensor)  # expect: any

            fakes, _ = G(reals, target_labels)
            adv_real, cls_real = D(reals)
            adv_fake, _ = D(fakes.detach())
            d_loss = F.softplus(-adv_real).mean() + F.softplus(adv_fake).mean() \
                + F.binary_cross_entropy_with_logits(cls_real, real_labels)
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()

            fakes, mask = G(reals, target_labels)
            adv_fake, cls_fake = D(fakes)
            g_loss = F.softplus(-adv_fake).mean() \
                + F.binary_cross_entropy_with_logits(cls_fake, target_labels) + 0.05 * mask.mean()
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
        print(f"epoch {epoch}: d={d_loss.item():.3f} g={g_loss.item():.3f}")


if __name__ == "__main__":
    train()
