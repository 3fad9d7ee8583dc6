# twin of: bugs/dg_sync09_synth_noise_host_alloc.py
# area: transfer & sync
# correct: the noise buffer is generated directly on the module's device, so no host->device copy happens per forward call
import math
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class SynthConfig:
    batch_size: int = 32
    sample_rate: int = 16000
    buffer_seconds: float = 1.0

    @property
    def buffer_size(self):
        return int(self.sample_rate * self.buffer_seconds)


class SynthModule(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("_anchor", torch.zeros(()), persistent=False)

    @property
    def device(self):
        return self._anchor.device


class SineVCO(SynthModule):
    def __init__(self, cfg, base_hz=110.0):
        super().__init__(cfg)
        self.pitch = nn.Parameter(torch.full((cfg.batch_size, 1), base_hz))

    def forward(self):
        t = torch.arange(self.cfg.buffer_size, device=self.device) / self.cfg.sample_rate
        return torch.sin(2 * math.pi * self.pitch * t)


class NoiseVCO(SynthModule):
    def __init__(self, cfg, level=0.3):
        super().__init__(cfg)
        self.level = level

    def forward(self):
        noise = torch.rand(self.cfg.batch_size, self.cfg.buffer_size, device=self.device)
        return self.level * (2.0 * noise - 1.0)


class ADSR(SynthModule):
    def __init__(self, cfg, attack=0.05, release=0.3):
        super().__init__(cfg)
        self.attack = attack
        self.release = release

    def forward(self):
        t = torch.arange(self.cfg.buffer_size, device=self.device) / self.cfg.sample_rate
        rise = torch.clamp(t / self.attack, max=1.0)
        fall = torch.clamp((self.cfg.buffer_seconds - t) / self.release, max=1.0)
        return (rise * fall).expand(self.cfg.batch_size, -1)


class Voice(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.vco = SineVCO(cfg)
        self.noise = NoiseVCO(cfg)
        self.env = ADSR(cfg)

    def forward(self):
        return self.env() * (self.vco() + self.noise())


def render(voice, n_batches):
    peaks = []
    with torch.no_grad():
        for _ in range(n_batches):
            audio = voice()
            peaks.append(audio.abs().amax(dim=1))
    return torch.cat(peaks)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    voice = Voice(SynthConfig()).to(device)
    peaks = render(voice, n_batches=10)
    print(f"rendered {peaks.numel()} sounds, mean peak {peaks.mean().item():.3f}")


if __name__ == "__main__":
    main()
