# twin of: bugs/di_dev06_hybrid_encoder_pos_embed.py
# area: device placement
# correct: the precomputed position embedding is a non-persistent buffer, so model.to(device) moves it once and the .to() in forward is a no-op
import torch
import torch.nn as nn


class EncoderConfig:
    in_channels = (32, 64, 96)
    hidden_dim = 64
    use_encoder_idx = (2,)
    num_heads = 4
    eval_spatial_size = (64, 64)
    feat_strides = (8, 16, 32)
    temperature = 10000.0


def build_2d_sincos_position_embedding(w, h, embed_dim, temperature):
    grid_w = torch.arange(w, dtype=torch.float32)
    grid_h = torch.arange(h, dtype=torch.float32)
    grid_w, grid_h = torch.meshgrid(grid_w, grid_h, indexing="ij")
    pos_dim = embed_dim // 4
    omega = 1.0 / temperature ** (torch.arange(pos_dim, dtype=torch.float32) / pos_dim)
    out_w = grid_w.flatten()[:, None] @ omega[None]
    out_h = grid_h.flatten()[:, None] @ omega[None]
    return torch.cat([out_w.sin(), out_w.cos(), out_h.sin(), out_h.cos()], dim=1)[None]


class HybridEncoder(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        self.input_proj = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c, cfg.hidden_dim, 1, bias=False), nn.BatchNorm2d(cfg.hidden_dim))
            for c in cfg.in_channels)
        self.encoder = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg.hidden_dim, cfg.num_heads, cfg.hidden_dim * 4,
                                       dropout=0.0, batch_first=True)
            for _ in cfg.use_encoder_idx)
        self.fuse = nn.Conv2d(cfg.hidden_dim * 2, cfg.hidden_dim, 1)
        self._reset_parameters()

    def _reset_parameters(self):
        for idx in self.cfg.use_encoder_idx:
            stride = self.cfg.feat_strides[idx]
            pos_embed = build_2d_sincos_position_embedding(
                self.cfg.eval_spatial_size[1] // stride, self.cfg.eval_spatial_size[0] // stride,
                self.cfg.hidden_dim, self.cfg.temperature)
            self.register_buffer(f"pos_embed{idx}", pos_embed, persistent=False)

    def forward(self, feats):
        proj = [p(f) for p, f in zip(self.input_proj, feats)]
        for i, enc_ind in enumerate(self.cfg.use_encoder_idx):
            h, w = proj[enc_ind].shape[2:]
            src_flatten = proj[enc_ind].flatten(2).permute(0, 2, 1)
            pos_embed = getattr(self, f"pos_embed{enc_ind}").to(src_flatten.device)
            memory = self.encoder[i](src_flatten + pos_embed)
            proj[enc_ind] = memory.permute(0, 2, 1).reshape(-1, self.cfg.hidden_dim, h, w)
        top = nn.functional.interpolate(proj[-1], size=proj[-2].shape[2:], mode="nearest")
        return [proj[0], self.fuse(torch.cat([proj[-2], top], dim=1)), proj[-1]]


class Backbone(nn.Module):
    def __init__(self, chans=(32, 64, 96)):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, chans[0], 3, 8, 1), nn.ReLU())
        self.s2 = nn.Sequential(nn.Conv2d(chans[0], chans[1], 3, 2, 1), nn.ReLU())
        self.s3 = nn.Sequential(nn.Conv2d(chans[1], chans[2], 3, 2, 1), nn.ReLU())

    def forward(self, x):
        c3 = self.stem(x)
        c4 = self.s2(c3)
        return [c3, c4, self.s3(c4)]


@torch.no_grad()
def benchmark(backbone, encoder, images, iters):
    outs = None
    for _ in range(iters):
        outs = encoder(backbone(images))
    return [o.shape for o in outs]


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = EncoderConfig()
    backbone = Backbone(cfg.in_channels).to(device).eval()
    encoder = HybridEncoder(cfg).to(device).eval()
    images = torch.randn(4, 3, *cfg.eval_spatial_size, device=device)
    shapes = benchmark(backbone, encoder, images, iters=10)
    print("fused feature shapes:", [tuple(s) for s in shapes])
