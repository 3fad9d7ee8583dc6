# source: https://github.com/Bobo-y/flexible-yolov5/issues/111
# area: device placement
# bug: the detection head caches its grids in plain Python lists; they are filled on the CPU during export, pickled with the model, and after torch.load(...).to(device) the stale CPU grids are reused because only their shape is checked
import os
import tempfile

import torch
import torch.nn as nn


class Detect(nn.Module):
    def __init__(self, num_classes, anchors, channels):
        super().__init__()
        self.no = num_classes + 5
        self.nl = len(anchors)
        self.na = len(anchors[0]) // 2
        self.grid = [torch.empty(0) for _ in range(self.nl)]  # expect[w]: any
        self.anchor_grid = [torch.empty(0) for _ in range(self.nl)]  # expect[w]: any
        self.register_buffer("anchors", torch.tensor(anchors, dtype=torch.float32).view(self.nl, -1, 2))
        self.register_buffer("stride", torch.tensor([8.0, 16.0]))
        self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in channels)

    def _make_grid(self, nx, ny, i):
        d = self.anchors.device
        yv, xv = torch.meshgrid(torch.arange(ny, device=d), torch.arange(nx, device=d), indexing="ij")
        grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
        anchor_grid = (self.anchors[i] * self.stride[i]).view(1, self.na, 1, 1, 2).expand(1, self.na, ny, nx, 2)
        return grid, anchor_grid

    def forward(self, feats):
        outputs = []
        for i, x in enumerate(feats):
            x = self.m[i](x)
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if self.grid[i].shape[2:4] != x.shape[2:4]:  # expect[w]: any
                self.grid[i], self.anchor_grid[i] = self._make_grid(nx, ny, i)
            y = x.sigmoid()
            xy = (y[..., 0:2] * 2 - 0.5 + self.grid[i]) * self.stride[i]
            wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]
            outputs.append(torch.cat((xy, wh, y[..., 4:]), -1).view(bs, -1, self.no))
        return torch.cat(outputs, 1)


class TinyYolo(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.SiLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU(),
                                    nn.Conv2d(32, 32, 3, 2, 1), nn.SiLU())
        self.stage2 = nn.Sequential(nn.Conv2d(32, 64, 3, 2, 1), nn.SiLU())
        anchors = [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119]]
        self.detect = Detect(num_classes, anchors, channels=(32, 64))

    def forward(self, x):
        p3 = self.stage1(x)
        p4 = self.stage2(p3)
        return self.detect([p3, p4])


def export_checkpoint(path, img_size):
    model = TinyYolo().eval()
    with torch.no_grad():
        model(torch.zeros(1, 3, img_size, img_size))
    torch.save({"model": model, "img_size": img_size}, path)


def run_inference(path, device, conf_thres=0.5):
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    model = ckpt["model"].to(device).eval()
    images = torch.rand(4, 3, ckpt["img_size"], ckpt["img_size"], device=device)
    with torch.no_grad():
        pred = model(images)
    keep = pred[..., 4] > conf_thres
    return [p[k] for p, k in zip(pred, keep)]


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_path = os.path.join(tmp, "tiny_yolo.pt")
        export_checkpoint(ckpt_path, img_size=128)
        detections = run_inference(ckpt_path, device)
    print("boxes per image:", [d.shape[0] for d in detections])
