# source: https://github.com/facebookresearch/fairchem/pull/838
# area: AMP
# bug: the norm layer uses the deprecated torch.cuda.amp.autocast decorator (FutureWarning on current PyTorch, slated for removal) instead of torch.autocast("cuda", ...)
import torch
import torch.nn as nn
import torch.nn.functional as F


class EquivariantRMSNorm(nn.Module):
    """RMS norm over spherical-harmonic channels; kept in fp32 for stability."""

    def __init__(self, lmax, num_channels, eps=1e-5):
        super().__init__()
        self.lmax = lmax
        self.num_channels = num_channels
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(lmax + 1, num_channels))
        degrees = torch.cat([torch.full((2 * l + 1,), l, dtype=torch.long) for l in range(lmax + 1)])
        self.register_buffer("expand_index", degrees, persistent=False)

    def __repr__(self):
        return f"{self.__class__.__name__}(lmax={self.lmax}, num_channels={self.num_channels})"

    @torch.cuda.amp.autocast(enabled=False)  # expect: any
    def forward(self, node_input):
        x = node_input.float()
        rms = x.pow(2).mean(dim=(1, 2), keepdim=True).add(self.eps).rsqrt()
        w = self.weight.index_select(0, self.expand_index)
        return x * rms * w.unsqueeze(0)


class EdgeBlock(nn.Module):
    def __init__(self, lmax, channels):
        super().__init__()
        self.norm = EquivariantRMSNorm(lmax, channels)
        self.mix = nn.Linear(channels, channels)
        self.gate = nn.Linear(channels, channels)

    def forward(self, x):
        h = self.norm(x)
        scalar = h[:, 0:1, :]
        return x + self.mix(h) * torch.sigmoid(self.gate(scalar))


class TinyEquiformer(nn.Module):
    def __init__(self, lmax=2, channels=32, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList(EdgeBlock(lmax, channels) for _ in range(depth))
        self.head = nn.Linear(channels, 1)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return self.head(x[:, 0, :]).squeeze(-1)


def train(epochs=3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = TinyEquiformer().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    n_sph = (model.blocks[0].norm.lmax + 1) ** 2
    feats = torch.randn(128, n_sph, 32)
    energy = torch.randn(128)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(feats, energy),
                                         batch_size=32, pin_memory=use_amp)
    for _ in range(epochs):
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                pred = model(x)
            loss = F.l1_loss(pred.float(), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    return model


if __name__ == "__main__":
    m = train()
    print(m.blocks[0].norm)
