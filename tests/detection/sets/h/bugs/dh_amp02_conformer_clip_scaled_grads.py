# source: https://github.com/k2-fsa/icefall/pull/2081
# area: AMP
# bug: gradients are clipped while still multiplied by the GradScaler loss scale (no scaler.unscale_ first), so on a GPU the max_norm is applied to ~65536x-inflated norms and every update is shrunk to almost nothing
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainParams:
    feat_dim: int = 32
    d_model: int = 64
    num_classes: int = 28  # blank + 26 letters + space
    max_norm: float = 1.0
    lr: float = 1e-3
    batch_size: int = 4
    num_frames: int = 40
    max_label_len: int = 8
    num_batches: int = 6
    use_fp16: bool = torch.cuda.is_available()


class VisualFrontend(nn.Module):
    def __init__(self, feat_dim, d_model):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(feat_dim, d_model, kernel_size=5, padding=2),
            nn.BatchNorm1d(d_model),
            nn.ReLU(),
        )

    def forward(self, x):  # (B, T, F)
        return self.conv(x.transpose(1, 2)).transpose(1, 2)


class LipReadingCTC(nn.Module):
    def __init__(self, p: TrainParams):
        super().__init__()
        self.frontend = VisualFrontend(p.feat_dim, p.d_model)
        layer = nn.TransformerEncoderLayer(p.d_model, nhead=4, dim_feedforward=128, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.ctc_output = nn.Linear(p.d_model, p.num_classes)

    def forward(self, feats):
        return self.ctc_output(self.encoder(self.frontend(feats))).log_softmax(dim=-1)


def make_batch(p: TrainParams, device):
    feats = torch.randn(p.batch_size, p.num_frames, p.feat_dim, device=device)
    feat_lens = torch.full((p.batch_size,), p.num_frames, dtype=torch.long, device=device)
    target_lens = torch.randint(3, p.max_label_len + 1, (p.batch_size,), device=device)
    targets = torch.randint(1, p.num_classes, (p.batch_size, p.max_label_len), device=device)
    return feats, targets, feat_lens, target_lens


def compute_loss(model, feats, targets, feat_lens, target_lens):
    log_probs = model(feats).transpose(0, 1)  # (T, B, C)
    return F.ctc_loss(log_probs, targets, feat_lens, target_lens, blank=0, reduction="mean", zero_infinity=True)


def train_one_epoch(p, model, optimizer, scaler, device):
    model.train()
    tot_loss = torch.zeros((), device=device)
    for _ in range(p.num_batches):
        feats, targets, feat_lens, target_lens = make_batch(p, device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=p.use_fp16):
            loss = compute_loss(model, feats, targets, feat_lens, target_lens)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=p.max_norm)  # expect: any
        scaler.step(optimizer)
        scaler.update()
        tot_loss += loss.detach()
    return tot_loss / p.num_batches


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(42)
    params = TrainParams()
    model = LipReadingCTC(params).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=params.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=params.use_fp16)
    for epoch in range(2):
        avg = train_one_epoch(params, model, optimizer, scaler, device)
        print(f"epoch {epoch}: ctc loss {avg.item():.3f}")


if __name__ == "__main__":
    main()
