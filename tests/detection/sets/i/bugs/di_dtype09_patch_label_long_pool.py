# source: https://github.com/pytorch/pytorch/issues/139115
# area: dtype
# bug: per-patch pixel counts are computed by sum-pooling an int64 mask; avg_pool2d has a Long kernel on CPU only, so on the GPU it raises "avg_pool2d_out_cuda_frame" not implemented for 'Long'
import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchConfig:
    image_size = 64
    patch = 8
    num_classes = 5
    ignore_index = 255
    min_fraction = 0.5
    dim = 64


def patch_targets(seg, cfg):
    """Turn a dense segmentation map into one label per ViT patch (majority vote)."""
    area = cfg.patch * cfg.patch
    counts = []
    for c in range(cfg.num_classes):
        mask = (seg == c).long().unsqueeze(1)  # expect[w]: any
        counts.append(F.avg_pool2d(mask, cfg.patch, divisor_override=1))  # expect[w]: any
    counts = torch.cat(counts, dim=1)
    best_count, best_cls = counts.max(dim=1)
    target = torch.where(best_count * 1.0 >= cfg.min_fraction * area, best_cls,
                         torch.full_like(best_cls, cfg.ignore_index))
    return target.flatten(1)


class PatchSegmenter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Conv2d(3, cfg.dim, cfg.patch, stride=cfg.patch)
        n = (cfg.image_size // cfg.patch) ** 2
        self.pos = nn.Parameter(torch.zeros(1, n, cfg.dim))
        layer = nn.TransformerEncoderLayer(cfg.dim, nhead=4, dim_feedforward=128, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)

    def forward(self, images):
        x = self.embed(images).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.encoder(x))


def synthetic_batch(cfg, batch=8):
    images = torch.rand(batch, 3, cfg.image_size, cfg.image_size)
    seg = torch.randint(0, cfg.num_classes, (batch, cfg.image_size // 16, cfg.image_size // 16))
    seg = seg.repeat_interleave(16, dim=1).repeat_interleave(16, dim=2)
    seg[:, :4] = cfg.ignore_index
    return images, seg


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = PatchConfig()
    model = PatchSegmenter(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(4):
        images, seg = synthetic_batch(cfg)
        images, seg = images.to(device), seg.to(device)
        target = patch_targets(seg, cfg)
        logits = model(images)
        loss = F.cross_entropy(logits.reshape(-1, cfg.num_classes), target.reshape(-1),
                               ignore_index=cfg.ignore_index)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"final patch loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
