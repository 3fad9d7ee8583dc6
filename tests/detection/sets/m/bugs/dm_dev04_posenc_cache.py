# source: https://github.com/tatp22/multidim-positional-encoding/issues/33
# area: device placement
# bug: the sinusoidal 3D encoding is built (and cached) on the CPU, so Summer adds a CPU tensor to CUDA patch embeddings
import math

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def get_emb(sin_inp):
    emb = torch.stack((sin_inp.sin(), sin_inp.cos()), dim=-1)
    return torch.flatten(emb, -2, -1)


class PositionalEncoding3D(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.org_channels = channels
        channels = int(math.ceil(channels / 6) * 2)
        self.channels = channels
        self.inv_freq = 1.0 / (10000 ** (torch.arange(0, channels, 2).float() / channels))  # expect[p]: any
        self.cached_penc = None

    def forward(self, tensor):
        if tensor.dim() != 5:
            raise RuntimeError("expected (batch, x, y, z, ch)")
        if self.cached_penc is not None and self.cached_penc.shape == tensor.shape:
            return self.cached_penc
        b, x, y, z, orig_ch = tensor.shape
        pos_x = torch.arange(x, dtype=self.inv_freq.dtype)
        pos_y = torch.arange(y, dtype=self.inv_freq.dtype)
        pos_z = torch.arange(z, dtype=self.inv_freq.dtype)
        emb_x = get_emb(torch.einsum("i,j->ij", pos_x, self.inv_freq))[:, None, None, :]
        emb_y = get_emb(torch.einsum("i,j->ij", pos_y, self.inv_freq))[:, None, :]
        emb_z = get_emb(torch.einsum("i,j->ij", pos_z, self.inv_freq))
        emb = torch.zeros((x, y, z, self.channels * 3), dtype=tensor.dtype)  # expect[p]: any
        emb[:, :, :, : self.channels] = emb_x
        emb[:, :, :, self.channels : 2 * self.channels] = emb_y
        emb[:, :, :, 2 * self.channels :] = emb_z
        self.cached_penc = emb[None, :, :, :, :orig_ch].repeat(b, 1, 1, 1, 1)
        return self.cached_penc


class Summer(nn.Module):
    def __init__(self, penc):
        super().__init__()
        self.penc = penc

    def forward(self, tensor):
        penc = self.penc(tensor)
        return tensor + penc  # expect[p]: any


class VolumeSwinStem(nn.Module):
    def __init__(self, in_ch=1, dim=24, patch=4):
        super().__init__()
        self.patch_embed = nn.Conv3d(in_ch, dim, kernel_size=patch, stride=patch)
        self.add_pos = Summer(PositionalEncoding3D(dim))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, vol):
        tokens = self.patch_embed(vol).permute(0, 2, 3, 4, 1)
        tokens = self.norm(self.add_pos(tokens))
        return self.head(tokens.mean(dim=(1, 2, 3)))


@torch.no_grad()
def run_test_split(model, volumes):
    model.eval()
    preds = []
    for vol in volumes:
        logits = model(vol.unsqueeze(0).to(device))
        preds.append(logits.argmax(dim=-1))
    return torch.cat(preds)


def main():
    torch.manual_seed(0)
    model = VolumeSwinStem().to(device)
    volumes = torch.randn(6, 1, 16, 16, 16)
    preds = run_test_split(model, volumes)
    print("test predictions:", preds.cpu().tolist())


if __name__ == "__main__":
    main()
