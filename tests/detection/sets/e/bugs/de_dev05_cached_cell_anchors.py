# source: https://github.com/pytorch/vision/pull/1312
# area: device placement
# bug: cell anchors are cached in a plain list on the device of the first forward (a CPU smoke test) and never rebuilt after model.to(cuda)
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GridAnchorGenerator(nn.Module):
    def __init__(self, sizes=(16, 32), ratios=(0.5, 1.0, 2.0)):
        super().__init__()
        self.sizes = sizes
        self.ratios = ratios
        self.cell_anchors = None

    def set_cell_anchors(self, dtype, dev):
        if self.cell_anchors is not None:  # expect[w]: any
            return
        scales = torch.as_tensor(self.sizes, dtype=dtype, device=dev)
        ratios = torch.as_tensor(self.ratios, dtype=dtype, device=dev)
        h = ratios.sqrt()[:, None] * scales[None, :]
        w = (1.0 / ratios.sqrt())[:, None] * scales[None, :]
        base = torch.stack([-w, -h, w, h], dim=-1).reshape(-1, 4) / 2
        self.cell_anchors = [base.round()]  # expect[w]: any

    def forward(self, feature, image_size):
        self.set_cell_anchors(feature.dtype, feature.device)
        gh, gw = feature.shape[-2:]
        sy, sx = image_size[0] // gh, image_size[1] // gw
        ys = torch.arange(gh, device=feature.device, dtype=feature.dtype) * sy
        xs = torch.arange(gw, device=feature.device, dtype=feature.dtype) * sx
        yy, xx = torch.meshgrid(ys, xs, indexing="ij")
        shifts = torch.stack([xx, yy, xx, yy], dim=-1).reshape(-1, 1, 4)
        return (shifts + self.cell_anchors[0][None]).reshape(-1, 4)


class TinyRPN(nn.Module):
    def __init__(self, num_anchors=6):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.obj = nn.Conv2d(32, num_anchors, 1)
        self.reg = nn.Conv2d(32, num_anchors * 4, 1)
        self.anchors = GridAnchorGenerator()

    def forward(self, images):
        feat = self.backbone(images)
        b = images.size(0)
        anchors = self.anchors(feat, images.shape[-2:])
        logits = self.obj(feat).permute(0, 2, 3, 1).reshape(b, -1)
        deltas = self.reg(feat).permute(0, 2, 3, 1).reshape(b, -1, 4)
        boxes = anchors[None] + deltas * 8.0
        return logits, boxes


def smoke_test(model):
    with torch.no_grad():
        logits, boxes = model(torch.zeros(1, 3, 64, 64))
    assert boxes.shape[1] == logits.shape[1]


def main():
    torch.manual_seed(0)
    model = TinyRPN()
    smoke_test(model)
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for step in range(10):
        images = torch.randn(4, 3, 64, 64, device=device)
        logits, boxes = model(images)
        target_obj = torch.zeros_like(logits)
        target_obj[:, ::7] = 1.0
        loss = F.binary_cross_entropy_with_logits(logits, target_obj)
        loss = loss + 1e-4 * boxes.abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("loss", loss.item())


if __name__ == "__main__":
    main()
