# source: https://chaos-blog.github.io/posts/20
# area: porting & distributed
# bug: on a multi-GPU machine the model is wrapped in nn.DataParallel and its state_dict is saved with "module." prefixes, which the plain model in the inference helper cannot load (missing/unexpected keys)
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class SuperResNet(nn.Module):
    def __init__(self, scale=2, channels=32):
        super().__init__()
        self.head = nn.Conv2d(3, channels, 3, padding=1)
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(inplace=True),
        )
        self.tail = nn.Conv2d(channels, 3 * scale * scale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(scale)
        self.scale = scale

    def forward(self, lr_img):
        feat = self.head(lr_img)
        feat = feat + self.body(feat)
        base = F.interpolate(lr_img, scale_factor=self.scale, mode="bilinear", align_corners=False)
        return base + self.shuffle(self.tail(feat))


def make_pairs(n, gen, size=32, scale=2):
    hr = torch.rand(n, 3, size, size, generator=gen)
    lr = F.avg_pool2d(hr, scale)
    return lr, hr


def train_and_save(ckpt_path, steps=8):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SuperResNet().to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    gen = torch.Generator().manual_seed(7)
    for _ in range(steps):
        lr, hr = make_pairs(8, gen)
        lr, hr = lr.to(device), hr.to(device)
        loss = F.l1_loss(model(lr), hr)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.save({"model": model.state_dict(), "scale": 2}, ckpt_path)  # expect[w]: any
    return loss.item()


def load_for_inference(ckpt_path, device):
    ckpt = torch.load(ckpt_path, map_location=device)
    model = SuperResNet(scale=ckpt["scale"])
    model.load_state_dict(ckpt["model"])  # expect[w]: any
    return model.to(device).eval()


@torch.no_grad()
def upscale(model, images, device, batch_size=4):
    outs = []
    for i in range(0, images.size(0), batch_size):
        chunk = images[i:i + batch_size].to(device)
        outs.append(model(chunk).clamp_(0, 1))
    return torch.cat(outs).cpu()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sr_x2.pt")
        final_loss = train_and_save(path)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = load_for_inference(path, device)
        lr, _ = make_pairs(6, torch.Generator().manual_seed(99))
        sr = upscale(model, lr, device)
        print(f"train l1 {final_loss:.4f}, upscaled {tuple(lr.shape)} -> {tuple(sr.shape)}")


if __name__ == "__main__":
    main()
