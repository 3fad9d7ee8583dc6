# source: https://github.com/Megvii-BaseDetection/YOLOX/pull/1679
# area: device placement
# bug: the decode grid is rebuilt with torch.arange/meshgrid on the CPU and cached in a plain list, then added to the CUDA head output
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class HeadConfig:
    num_classes: int = 4
    in_channels: tuple = (32, 64)
    strides: tuple = (8, 16)
    width: int = 32
    score_thresh: float = 0.3
    max_dets: int = 50


class TinyBackbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.SiLU(),
                                    nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU(),
                                    nn.Conv2d(32, 32, 3, 2, 1), nn.SiLU())
        self.stage2 = nn.Sequential(nn.Conv2d(32, 64, 3, 2, 1), nn.SiLU())

    def forward(self, x):
        c3 = self.stage1(x)
        c4 = self.stage2(c3)
        return [c3, c4]


class DecoupledHead(nn.Module):
    def __init__(self, cfg: HeadConfig):
        super().__init__()
        self.cfg = cfg
        self.stems = nn.ModuleList(nn.Conv2d(c, cfg.width, 1) for c in cfg.in_channels)
        self.cls_preds = nn.ModuleList(nn.Conv2d(cfg.width, cfg.num_classes, 1) for _ in cfg.in_channels)
        self.reg_preds = nn.ModuleList(nn.Conv2d(cfg.width, 4, 1) for _ in cfg.in_channels)
        self.obj_preds = nn.ModuleList(nn.Conv2d(cfg.width, 1, 1) for _ in cfg.in_channels)
        self.grids = [torch.zeros(1)] * len(cfg.in_channels)

    def _decode_level(self, output, k, stride):
        grid = self.grids[k]
        batch, n_ch, h, w = output.shape
        if grid.shape[2:4] != output.shape[2:4]:
            ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")  # expect[grid]: any
            grid = torch.stack((xs, ys), 2).view(1, 1, h, w, 2).to(output.dtype)
            self.grids[k] = grid
        output = output.permute(0, 2, 3, 1).reshape(batch, h * w, n_ch)
        grid = grid.view(1, -1, 2)
        xy = (output[..., :2] + grid) * stride  # expect[grid]: any
        wh = torch.exp(output[..., 2:4]) * stride
        return torch.cat([xy, wh, output[..., 4:]], dim=-1)

    def forward(self, feats):
        outputs = []
        for k, (x, stride) in enumerate(zip(feats, self.cfg.strides)):
            x = self.stems[k](x)
            out = torch.cat([self.reg_preds[k](x),
                             self.obj_preds[k](x).sigmoid(),
                             self.cls_preds[k](x).sigmoid()], dim=1)
            outputs.append(self._decode_level(out, k, stride))
        return torch.cat(outputs, dim=1)


class Detector(nn.Module):
    def __init__(self, cfg: HeadConfig):
        super().__init__()
        self.backbone = TinyBackbone()
        self.head = DecoupledHead(cfg)

    def forward(self, images):
        return self.head(self.backbone(images))


def postprocess(preds, cfg: HeadConfig):
    results = []
    for p in preds:
        scores, labels = (p[:, 4:5] * p[:, 5:]).max(dim=1)
        keep = scores > cfg.score_thresh
        boxes = p[keep, :4]
        scores, labels = scores[keep], labels[keep]
        order = scores.argsort(descending=True)[: cfg.max_dets]
        results.append((boxes[order], scores[order], labels[order]))
    return results


@torch.no_grad()
def run_inference(model, images, cfg, batch_size=2):
    detections = []
    for i in range(0, images.shape[0], batch_size):
        preds = model(images[i:i + batch_size])
        detections.extend(postprocess(preds, cfg))
    return detections


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = HeadConfig()
    model = Detector(cfg).to(device).eval()
    images = torch.rand(6, 3, 128, 128, device=device)
    dets = run_inference(model, images, cfg)
    counts = torch.tensor([d[0].shape[0] for d in dets])
    print("images:", len(dets), "detections per image:", counts.tolist())
