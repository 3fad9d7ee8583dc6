# source: https://github.com/anglixjtu/msg_chn_wacv20/pull/9
# area: transfer & sync
# bug: the per-image runtime is taken with time.time() right after the forward call with no CUDA synchronisation, so it measures kernel launch, not inference
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class DepthCompletionNet(nn.Module):
    """Guided depth completion: RGB + sparse LiDAR -> dense depth."""

    def __init__(self, width=16):
        super().__init__()
        self.rgb_enc = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU())
        self.d_enc = nn.Sequential(nn.Conv2d(2, width, 3, padding=1), nn.ReLU(),
                                   nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU())
        self.dec = nn.Sequential(nn.Conv2d(2 * width, width, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(width, 1, 3, padding=1))

    def forward(self, rgb, sparse):
        valid = (sparse > 0).float()
        f = torch.cat([self.rgb_enc(rgb), self.d_enc(torch.cat([sparse, valid], 1))], 1)
        f = F.interpolate(f, size=rgb.shape[-2:], mode="bilinear", align_corners=False)
        return F.relu(self.dec(f))


class DepthTrainer:
    def __init__(self, net, device, params):
        self.net = net
        self.device = device
        self.params = params

    def make_sample(self, gen):
        h, w = self.params["height"], self.params["width"]
        rgb = torch.rand(1, 3, h, w, generator=gen)
        dense = torch.rand(1, 1, h, w, generator=gen) * 80.0
        keep = torch.rand(1, 1, h, w, generator=gen) < 0.05
        return rgb, dense * keep, dense

    @torch.no_grad()
    def evaluate(self, num_images=20):
        self.net.eval()
        gen = torch.Generator().manual_seed(1)
        err_sum = torch.zeros((), device=self.device)
        total_time = 0.0
        for i in range(num_images):
            rgb, sparse, gt = (t.to(self.device) for t in self.make_sample(gen))
            start = time.time()  # expect[t]: any
            pred = self.net(rgb, sparse)
            duration = time.time() - start  # expect[t]: any
            if i >= self.params["warmup"]:
                total_time += duration
            err_sum += torch.sqrt(F.mse_loss(pred, gt))
        timed = num_images - self.params["warmup"]
        return {
            "rmse": err_sum.item() / num_images,
            "avg_runtime_s": total_time / timed,
        }


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    params = {"height": 64, "width": 208, "warmup": 3}
    net = DepthCompletionNet().to(device)
    trainer = DepthTrainer(net, device, params)
    stats = trainer.evaluate()
    print(f"RMSE {stats['rmse']:.3f}  runtime/img {stats['avg_runtime_s'] * 1000:.2f} ms")


if __name__ == "__main__":
    main()
