# source: https://github.com/princeton-vl/RAFT/pull/113
# area: transfer & sync
# bug: the flow model builds its pixel coordinate grid on the CPU in every forward and then copies it to the GPU, a pageable host-to-device copy per call
import random
import torch
import torch.nn as nn
import torch.nn.functional as F


def coords_grid(batch, ht, wd):
    ys, xs = torch.meshgrid(torch.arange(ht), torch.arange(wd), indexing="ij")  # expect[c]: any
    coords = torch.stack([xs, ys], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)


def bilinear_sampler(feat, coords):
    h, w = feat.shape[-2:]
    x = 2 * coords[:, 0] / (w - 1) - 1
    y = 2 * coords[:, 1] / (h - 1) - 1
    grid = torch.stack([x, y], dim=-1)
    return F.grid_sample(feat, grid, align_corners=True)


class Encoder(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, dim, 7, stride=2, padding=3), nn.ReLU(),
            nn.Conv2d(dim, dim, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(dim, dim, 3, stride=2, padding=1))

    def forward(self, x):
        return self.net(x)


class UpdateBlock(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(2 * dim + 2, 64, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(64, 2, 3, padding=1))

    def forward(self, ctx, warped, flow):
        return self.net(torch.cat([ctx, warped, flow], dim=1))


class TinyRAFT(nn.Module):
    def __init__(self, dim=32, iters=4):
        super().__init__()
        self.fnet = Encoder(dim)
        self.cnet = Encoder(dim)
        self.update = UpdateBlock(dim)
        self.iters = iters

    def initialize_flow(self, img):
        n, _, h, w = img.shape
        coords0 = coords_grid(n, h // 8, w // 8).to(img.device)  # expect[c]: any
        return coords0, coords0.clone()

    def forward(self, image1, image2):
        fmap1, fmap2 = self.fnet(image1), self.fnet(image2)
        ctx = torch.tanh(self.cnet(image1))
        coords0, coords1 = self.initialize_flow(image1)
        predictions = []
        for _ in range(self.iters):
            coords1 = coords1.detach()
            warped = bilinear_sampler(fmap2, coords1) - fmap1
            flow = coords1 - coords0
            coords1 = coords1 + self.update(ctx, warped, flow)
            predictions.append(8 * F.interpolate(coords1 - coords0, scale_factor=8, mode="bilinear",
                                                 align_corners=True))
        return predictions


def sequence_loss(preds, flow_gt, gamma=0.8):
    n = len(preds)
    return sum(gamma ** (n - i - 1) * (p - flow_gt).abs().mean() for i, p in enumerate(preds))


def synthetic_pair(batch, h, w, device):
    img1 = torch.rand(batch, 3, h, w, device=device)
    shift = [random.randint(-3, 3), random.randint(-3, 3)]
    img2 = torch.roll(img1, shifts=(shift[1], shift[0]), dims=(2, 3))
    flow = torch.zeros(batch, 2, h, w, device=device)
    flow[:, 0], flow[:, 1] = shift[0], shift[1]
    return img1, img2, flow


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    random.seed(0)
    model = TinyRAFT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=4e-4)
    total = torch.zeros((), device=device)
    for step in range(4):
        img1, img2, flow_gt = synthetic_pair(2, 64, 96, device)
        loss = sequence_loss(model(img1, img2), flow_gt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
    print(f"mean sequence loss {(total / 4).item():.4f}")


if __name__ == "__main__":
    main()
