# twin of: bugs/di_dist04_gpu_mode_dataparallel_load.py
# area: porting & distributed
# correct: the plain state_dict is loaded into the wrapped module (model.module) when DataParallel is used, so key names match in GPU and CPU mode
import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, 1, 1)
        self.act = nn.PReLU()

    def forward(self, x):
        return self.act(self.conv(x))


class RecurrentSRNet(nn.Module):
    def __init__(self, n_frames=3, feat=32, scale=2):
        super().__init__()
        self.scale = scale
        self.feat0 = ConvBlock(3 * n_frames, feat)
        self.body = nn.Sequential(ConvBlock(feat, feat), ConvBlock(feat, feat))
        self.up = nn.Sequential(nn.Conv2d(feat, 3 * scale * scale, 3, 1, 1), nn.PixelShuffle(scale))

    def forward(self, target, neighbors):
        x = torch.cat([target] + neighbors, dim=1)
        residual = self.up(self.body(self.feat0(x)))
        return F.interpolate(target, scale_factor=self.scale, mode="bicubic", align_corners=False) + residual


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="video SR test")
    p.add_argument("--gpu_mode", type=int, default=int(torch.cuda.is_available()))
    p.add_argument("--gpus", type=int, default=max(torch.cuda.device_count(), 1))
    p.add_argument("--nFrames", type=int, default=3)
    p.add_argument("--upscale_factor", type=int, default=2)
    return p.parse_args(argv)


def export_weights(path, opt):
    net = RecurrentSRNet(opt.nFrames, scale=opt.upscale_factor)
    torch.save(net.state_dict(), path)


def build_model(opt, device):
    model = RecurrentSRNet(opt.nFrames, scale=opt.upscale_factor)
    if opt.gpu_mode:
        model = nn.DataParallel(model, device_ids=list(range(opt.gpus)))
    return model.to(device)


def load_pretrained(model, path, device):
    state_dict = torch.load(path, map_location=device)
    net = model.module if isinstance(model, nn.DataParallel) else model
    net.load_state_dict(state_dict)
    print("pre-trained SR model is loaded.")
    return model


@torch.no_grad()
def run_test(model, opt, device, n_clips=4):
    model.eval()
    psnr_sum = torch.zeros((), device=device)
    for _ in range(n_clips):
        hr = torch.rand(1, 3, 32, 32, device=device)
        frames = [F.avg_pool2d(hr + 0.01 * torch.randn_like(hr), opt.upscale_factor) for _ in range(opt.nFrames)]
        sr = model(frames[0], frames[1:]).clamp(0, 1)
        mse = F.mse_loss(sr, hr)
        psnr_sum += 10 * torch.log10(1.0 / mse)
    return (psnr_sum / n_clips).item()


def main():
    opt = parse_args([])
    device = torch.device("cuda" if opt.gpu_mode else "cpu")
    torch.manual_seed(123)
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "netG_epoch_4_1.pth")
        export_weights(weights, opt)
        model = load_pretrained(build_model(opt, device), weights, device)
        print(f"avg PSNR {run_test(model, opt, device):.2f} dB")


if __name__ == "__main__":
    main()
