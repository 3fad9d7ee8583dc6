# source: https://github.com/pytorch/vision/pull/1745
# area: device placement
# bug: the anchor generator caches its cell anchors on whatever device the first forward used (a CPU summary pass) and never rebuilds them, so after model.to("cuda") the CPU anchors meet GPU box deltas
import torch
import torch.nn as nn


class AnchorGenerator(nn.Module):
    def __init__(self, sizes=(16, 32, 64), aspect_ratios=(0.5, 1.0, 2.0)):
        super().__init__()
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios
        self.cell_anchors = None

    @staticmethod
    def generate_anchors(sizes, aspect_ratios, dtype, device):
        scales = torch.as_tensor(sizes, dtype=dtype, device=device)
        ratios = torch.as_tensor(aspect_ratios, dtype=dtype, device=device)
        h_ratios = torch.sqrt(ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales[None, :]).view(-1)
        return (torch.stack([-ws, -hs, ws, hs], dim=1) / 2).round()

    def set_cell_anchors(self, dtype, device):
        if self.cell_anchors is not None:  # expect[w]: any
            return
        self.cell_anchors = self.generate_anchors(self.sizes, self.aspect_ratios, dtype, device)  # expect[w]: any

    def forward(self, image_size, feature_map):
        self.set_cell_anchors(feature_map.dtype, feature_map.device)
        fh, fw = feature_map.shape[-2:]
        stride_h, stride_w = image_size[0] // fh, image_size[1] // fw
        device = self.cell_anchors.device
        shift_y = torch.arange(0, fh, dtype=torch.float32, device=device) * stride_h
        shift_x = torch.arange(0, fw, dtype=torch.float32, device=device) * stride_w
        sy, sx = torch.meshgrid(shift_y, shift_x, indexing="ij")
        shifts = torch.stack([sx, sy, sx, sy], dim=-1).reshape(-1, 1, 4)
        return (shifts + self.cell_anchors[None]).reshape(-1, 4)


def decode_boxes(anchors, deltas):
    widths = anchors[:, 2] - anchors[:, 0]
    heights = anchors[:, 3] - anchors[:, 1]
    ctr_x = anchors[:, 0] + 0.5 * widths
    ctr_y = anchors[:, 1] + 0.5 * heights
    dx, dy, dw, dh = deltas.unbind(-1)
    px, py = ctr_x + dx * widths, ctr_y + dy * heights
    pw, ph = widths * torch.exp(dw.clamp(max=4.0)), heights * torch.exp(dh.clamp(max=4.0))
    return torch.stack([px - pw / 2, py - ph / 2, px + pw / 2, py + ph / 2], dim=-1)


class TinyDetector(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.anchor_gen = AnchorGenerator()
        na = len(self.anchor_gen.sizes) * len(self.anchor_gen.aspect_ratios)
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.cls_head = nn.Conv2d(32, na * num_classes, 1)
        self.box_head = nn.Conv2d(32, na * 4, 1)
        self.num_classes = num_classes

    def forward(self, images):
        feat = self.backbone(images)
        b = images.shape[0]
        logits = self.cls_head(feat).permute(0, 2, 3, 1).reshape(b, -1, self.num_classes)
        deltas = self.box_head(feat).permute(0, 2, 3, 1).reshape(b, -1, 4)
        anchors = self.anchor_gen(images.shape[-2:], feat)
        boxes = decode_boxes(anchors[None].expand(b, -1, -1).reshape(-1, 4), deltas.reshape(-1, 4))
        return logits.sigmoid(), boxes.view(b, -1, 4)


def summarize(model, image_size):
    with torch.no_grad():
        scores, boxes = model(torch.zeros(1, 3, *image_size))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"params={n_params} anchors/image={boxes.shape[1]} score shape={tuple(scores.shape)}")


@torch.no_grad()
def detect(model, images, score_thresh=0.55, top_k=20):
    scores, boxes = model(images)
    best, labels = scores.max(dim=-1)
    top_scores, top_idx = best.topk(top_k, dim=1)
    top_boxes = torch.gather(boxes, 1, top_idx[..., None].expand(-1, -1, 4))
    keep = top_scores > score_thresh
    return top_boxes, torch.gather(labels, 1, top_idx), keep


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyDetector().eval()
    summarize(model, (128, 128))
    model.to(device)
    images = torch.rand(4, 3, 128, 128, device=device)
    boxes, labels, keep = detect(model, images)
    print("kept detections per image:", keep.sum(dim=1).tolist())


if __name__ == "__main__":
    main()
