# source: https://github.com/ecmwf/WeatherGenerator/issues/874
# area: AMP
# bug: the default mixed-precision dtype is bfloat16 but the GradScaler is still enabled, adding unscale/inf-check work and a host sync to every GPU step for nothing
import torch
import torch.nn as nn
from dataclasses import dataclass

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass
class TrainConfig:
    n_vars: int = 6
    lat: int = 16
    lon: int = 32
    patch: int = 4
    d_model: int = 64
    n_layers: int = 2
    mixed_precision: bool = True
    mixed_precision_dtype: str = "bf16"
    lr: float = 2e-4
    steps: int = 10
    batch_size: int = 4


class PatchForecaster(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Conv2d(cfg.n_vars, cfg.d_model, cfg.patch, stride=cfg.patch)
        n_tokens = (cfg.lat // cfg.patch) * (cfg.lon // cfg.patch)
        self.pos = nn.Parameter(torch.zeros(1, n_tokens, cfg.d_model))
        layer = nn.TransformerEncoderLayer(cfg.d_model, 4, 2 * cfg.d_model, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.unembed = nn.ConvTranspose2d(cfg.d_model, cfg.n_vars, cfg.patch, stride=cfg.patch)

    def forward(self, state):
        b = state.shape[0]
        tok = self.embed(state)
        h, w = tok.shape[-2:]
        tok = tok.flatten(2).transpose(1, 2) + self.pos
        tok = self.blocks(tok)
        grid = tok.transpose(1, 2).reshape(b, -1, h, w)
        return state + self.unembed(grid)


def latitude_weights(cfg, device):
    lat = torch.linspace(-87.5, 87.5, cfg.lat, device=device)
    w = torch.cos(torch.deg2rad(lat))
    return (w / w.mean()).view(1, 1, -1, 1)


def sample_batch(cfg, device):
    x = torch.randn(cfg.batch_size, cfg.n_vars, cfg.lat, cfg.lon, device=device)
    y = x.roll(1, dims=-1) + 0.05 * torch.randn_like(x)
    return x, y


class ForecastTrainer:
    def __init__(self, cfg: TrainConfig, device):
        self.cfg, self.device = cfg, device
        self.model = PatchForecaster(cfg).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=0.05)
        self.amp_enabled = cfg.mixed_precision and device.type == "cuda"
        self.amp_dtype = _DTYPES[cfg.mixed_precision_dtype]
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.amp_enabled)  # expect: any
        self.lat_w = latitude_weights(cfg, device)

    def step(self, x, y):
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp_enabled):
            pred = self.model(x)
            loss = ((pred.float() - y) ** 2 * self.lat_w).mean()
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.scaler.step(self.opt)
        self.scaler.update()
        return loss.detach()

    def fit(self):
        self.model.train()
        history = torch.zeros(self.cfg.steps, device=self.device)
        for i in range(self.cfg.steps):
            history[i] = self.step(*sample_batch(self.cfg, self.device))
        print("lat-weighted mse per step:", [round(v, 4) for v in history.tolist()])


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ForecastTrainer(TrainConfig(), dev).fit()
