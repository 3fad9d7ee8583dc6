# source: https://github.com/haofeixu/aanet/issues/22
# area: transfer & sync
# bug: per-pair inference time is read with perf_counter right after the asynchronous CUDA forward, without synchronizing, so it only measures kernel launch time
import argparse
import time
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyStereoNet(nn.Module):
    def __init__(self, max_disp=16, feat=16):
        super().__init__()
        self.max_disp = max_disp
        self.feature = nn.Sequential(
            nn.Conv2d(3, feat, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(feat, feat, 3, padding=1),
        )
        self.refine = nn.Conv2d(max_disp, max_disp, 3, padding=1)

    def cost_volume(self, fl, fr):
        costs = []
        for d in range(self.max_disp):
            if d == 0:
                costs.append((fl * fr).mean(1))
            else:
                c = (fl[:, :, :, d:] * fr[:, :, :, :-d]).mean(1)
                costs.append(F.pad(c, (d, 0)))
        return torch.stack(costs, dim=1)

    def forward(self, left, right):
        cost = self.refine(self.cost_volume(self.feature(left), self.feature(right)))
        prob = F.softmax(cost, dim=1)
        disp_values = torch.arange(self.max_disp, device=prob.device, dtype=prob.dtype)
        disp = (prob * disp_values.view(1, -1, 1, 1)).sum(1, keepdim=True)
        return F.interpolate(disp, scale_factor=2, mode="bilinear", align_corners=False) * 2


def synthetic_pairs(n, h, w, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        left = torch.rand(1, 3, h, w, generator=g)
        right = torch.roll(left, shifts=-3, dims=3)
        yield left, right


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-pairs", type=int, default=12)
    parser.add_argument("--count-time", action="store_true", default=True)
    args = parser.parse_args([])

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyStereoNet().to(device).eval()
    inference_time = 0.0
    num_imgs = 0
    for left, right in synthetic_pairs(args.num_pairs, 96, 160):
        left, right = left.to(device), right.to(device)
        with torch.no_grad():
            start = time.perf_counter()
            pred_disp = model(left, right)
            elapsed = time.perf_counter() - start  # expect: any
        if num_imgs > 1:
            inference_time += elapsed
        num_imgs += 1
        _ = pred_disp.squeeze(0)
    if args.count_time:
        measured = max(num_imgs - 2, 1)
        print(f"=> Mean inference time for {measured} images: {inference_time / measured * 1000:.2f} ms")


if __name__ == "__main__":
    main()
