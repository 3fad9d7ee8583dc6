# source: https://github.com/facebookresearch/CrypTen/pull/131
# area: dtype
# bug: fixed-point activations and weights are int64; torch.matmul has no CUDA kernel for Long ("addmm_cuda" not implemented for 'Long')
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class FixedPointConfig:
    precision_bits: int = 16
    in_features: int = 64
    hidden: int = 128
    num_classes: int = 10
    batch_size: int = 32


class FixedPointEncoder:
    def __init__(self, precision_bits):
        self.scale = 2 ** precision_bits

    def encode(self, x):
        return torch.round(x * self.scale).to(torch.int64)

    def decode(self, x):
        return x.to(torch.float32) / self.scale

    def truncate(self, x):
        return torch.div(x, self.scale, rounding_mode="floor")


class FixedPointLinear:
    """Integer-only replica of an nn.Linear, as run by the secure backend."""

    def __init__(self, linear, encoder, device):
        self.encoder = encoder
        self.weight = encoder.encode(linear.weight.detach().t()).to(device)
        self.bias = encoder.encode(linear.bias.detach()).to(device)

    def __call__(self, x_enc):
        acc = torch.matmul(x_enc, self.weight)  # expect: any
        return self.encoder.truncate(acc) + self.bias


class FixedPointMLP:
    def __init__(self, model, encoder, device):
        self.layers = [FixedPointLinear(m, encoder, device)
                       for m in model if isinstance(m, nn.Linear)]

    def __call__(self, x_enc):
        for i, layer in enumerate(self.layers):
            x_enc = layer(x_enc)
            if i < len(self.layers) - 1:
                x_enc = torch.clamp(x_enc, min=0)
        return x_enc


def build_reference(cfg):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(cfg.in_features, cfg.hidden),
        nn.ReLU(),
        nn.Linear(cfg.hidden, cfg.num_classes),
    )


@torch.no_grad()
def compare(cfg, device):
    reference = build_reference(cfg).to(device).eval()
    encoder = FixedPointEncoder(cfg.precision_bits)
    secure = FixedPointMLP(reference, encoder, device)

    x = torch.randn(cfg.batch_size, cfg.in_features, device=device)
    expected = reference(x)
    got = encoder.decode(secure(encoder.encode(x)))

    err = (expected - got).abs().max()
    agree = (expected.argmax(1) == got.argmax(1)).float().mean()
    return err, agree


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = FixedPointConfig()
    err, agree = compare(cfg, device)
    print(f"max abs error {err.item():.2e}, argmax agreement {agree.item():.3f}")


if __name__ == "__main__":
    main()
