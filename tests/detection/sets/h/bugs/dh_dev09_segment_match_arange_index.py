# source: https://github.com/ykdai/BasicPBC/issues/4
# area: device placement
# bug: the segment ids are made with torch.arange on the CPU and then indexed by a boolean mask computed on the GPU, which raises a device error during evaluation
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SegmentMatcher(nn.Module):
    """Matches each segment of a line-art target frame to a segment of the colored reference."""

    def __init__(self, feat_dim=32, hidden=64):
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(feat_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.temperature = nn.Parameter(torch.tensor(0.1))

    def forward(self, target_feats, ref_feats):
        t = F.normalize(self.encode(target_feats), dim=-1)
        r = F.normalize(self.encode(ref_feats), dim=-1)
        return t @ r.transpose(-1, -2) / self.temperature


def make_frame_pair(n_segments=40, feat_dim=32, size=64):
    ref_feats = torch.randn(n_segments, feat_dim)
    perm = torch.randperm(n_segments)
    target_feats = ref_feats[perm] + 0.3 * torch.randn(n_segments, feat_dim)
    blocks = torch.randint(1, n_segments + 1, (size // 8, size // 8))
    segment_map = blocks.repeat_interleave(8, 0).repeat_interleave(8, 1)
    return {"target": target_feats, "ref": ref_feats, "gt": perm, "segment": segment_map}


def to_device(sample, dev):
    return {k: v.to(dev) for k, v in sample.items()}


@torch.no_grad()
def frame_accuracy(model, data):
    logits = model(data["target"], data["ref"])
    pred = logits.argmax(dim=-1)
    n = pred.shape[0]
    hit = pred == data["gt"]
    areas = torch.bincount(data["segment"].flatten(), minlength=n + 1)[1:]
    correct_ids = torch.arange(0, n)[hit]  # expect: any
    area_acc = areas[correct_ids].sum() / areas.sum().clamp(min=1)
    return hit.float().mean(), area_acc


def train_and_evaluate(train_steps=25, eval_frames=4):
    model = SegmentMatcher().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(train_steps):
        data = to_device(make_frame_pair(), device)
        loss = F.cross_entropy(model(data["target"], data["ref"]), data["gt"])
        opt.zero_grad()
        loss.backward()
        opt.step()

    model.eval()
    seg_acc = torch.zeros((), device=device)
    area_acc = torch.zeros((), device=device)
    for _ in range(eval_frames):
        s, a = frame_accuracy(model, to_device(make_frame_pair(), device))
        seg_acc += s
        area_acc += a
    print(f"segment acc {(seg_acc / eval_frames).item():.3f}  area acc {(area_acc / eval_frames).item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train_and_evaluate()
