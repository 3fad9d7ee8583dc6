# source: https://github.com/talmolab/sleap-nn/pull/342
# area: transfer & sync
# bug: the PAF cost matrix is filled one cell at a time with mask.any() and .item() on GPU tensors, a host sync per candidate pair
import numpy as np
import torch
import torch.nn as nn

SKELETON = [(0, 1), (1, 2), (2, 3)]
N_NODES = 4
PEAKS_PER_NODE = 4
LINE_SAMPLES = 8
MIN_LINE_SCORE = 0.05


class TinyBottomUp(nn.Module):
    def __init__(self, n_nodes=N_NODES, n_edges=len(SKELETON)):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        )
        self.confmap_head = nn.Conv2d(16, n_nodes, 1)
        self.paf_head = nn.Conv2d(16, 2 * n_edges, 1)

    def forward(self, img):
        feats = self.backbone(img)
        return torch.sigmoid(self.confmap_head(feats)), torch.tanh(self.paf_head(feats))


def find_peaks(confmaps, k=PEAKS_PER_NODE):
    b, n, h, w = confmaps.shape
    scores, flat_idx = confmaps.flatten(2).topk(k, dim=-1)
    ys = torch.div(flat_idx, w, rounding_mode="floor")
    xs = flat_idx % w
    return torch.stack([xs, ys], dim=-1).float(), scores


def line_scores_for_edge(paf_xy, src_pts, dst_pts, n_samples=LINE_SAMPLES):
    h, w = paf_xy.shape[-2:]
    delta = dst_pts[None, :, :] - src_pts[:, None, :]
    length = delta.norm(dim=-1, keepdim=True).clamp_min(1e-6)
    unit = delta / length
    alphas = torch.linspace(0.0, 1.0, n_samples, device=paf_xy.device)
    pts = src_pts[:, None, None, :] + alphas[None, None, :, None] * delta[:, :, None, :]
    px = pts[..., 0].round().long().clamp(0, w - 1)
    py = pts[..., 1].round().long().clamp(0, h - 1)
    vx = paf_xy[0][py, px]
    vy = paf_xy[1][py, px]
    return vx * unit[..., 0:1] + vy * unit[..., 1:2]


def match_candidates_sample(paf, peaks, peak_scores):
    matches = []
    for e, (src, dst) in enumerate(SKELETON):
        scores = line_scores_for_edge(paf[2 * e:2 * e + 2], peaks[src], peaks[dst])
        valid = scores > MIN_LINE_SCORE
        n_src, n_dst = scores.shape[:2]
        cost_matrix = np.full((n_src, n_dst), np.inf, dtype=np.float32)
        for i in range(n_src):
            for j in range(n_dst):
                mask = valid[i, j]
                if mask.any():  # expect[w]: any
                    cost_matrix[i, j] = -scores[i, j][mask].mean().item()  # expect[w]: any
        matches.append(greedy_assign(cost_matrix))
    return matches


def greedy_assign(cost_matrix):
    pairs, used_r, used_c = [], set(), set()
    order = np.argsort(cost_matrix, axis=None)
    for flat in order:
        r, c = np.unravel_index(flat, cost_matrix.shape)
        if not np.isfinite(cost_matrix[r, c]) or r in used_r or c in used_c:
            continue
        pairs.append((int(r), int(c), float(-cost_matrix[r, c])))
        used_r.add(r)
        used_c.add(c)
    return pairs


@torch.no_grad()
def predict(model, frames, device, batch_size=4):
    model.eval()
    results = []
    for start in range(0, len(frames), batch_size):
        batch = frames[start:start + batch_size].to(device)
        confmaps, pafs = model(batch)
        peaks, peak_scores = find_peaks(confmaps)
        for b in range(batch.shape[0]):
            results.append(match_candidates_sample(pafs[b], peaks[b], peak_scores[b]))
    return results


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyBottomUp().to(device)
    frames = torch.rand(8, 1, 32, 32)
    out = predict(model, frames, device)
    n_links = sum(len(p) for frame in out for p in frame)
    print(f"frames: {len(out)}  linked pairs: {n_links}")
