# source: https://github.com/ByteDance-Seed/VeOmni/pull/747
# area: transfer & sync
# bug: the vision tower iterates the device tensor grid_thw, so every t/h/w is a 0-dim GPU tensor and each linspace/reshape/expand that consumes it forces an implicit device->host sync per image
import torch
import torch.nn as nn


class VisionPatchEmbedder(nn.Module):
    def __init__(self, patch_dim=48, hidden=64, num_position_embeddings=256, merge_size=2):
        super().__init__()
        self.proj = nn.Linear(patch_dim, hidden)
        self.pos_embed = nn.Embedding(num_position_embeddings, hidden)
        self.num_grid_per_side = int(num_position_embeddings ** 0.5)
        self.merge_size = merge_size
        self.hidden = hidden

    def fast_pos_embed_interpolate(self, grid_thw):
        side = self.num_grid_per_side
        m = self.merge_size
        device = self.pos_embed.weight.device
        table = self.pos_embed.weight.view(side, side, self.hidden)
        outputs = []
        for t, h, w in grid_thw:  # expect: any
            h_idx = torch.linspace(0, side - 1, h, device=device)
            w_idx = torch.linspace(0, side - 1, w, device=device)
            h_lo, w_lo = h_idx.floor().long(), w_idx.floor().long()
            h_hi = (h_lo + 1).clamp(max=side - 1)
            w_hi = (w_lo + 1).clamp(max=side - 1)
            dh = (h_idx - h_lo)[:, None, None]
            dw = (w_idx - w_lo)[None, :, None]
            top = table[h_lo][:, w_lo] * (1 - dw) + table[h_lo][:, w_hi] * dw
            bottom = table[h_hi][:, w_lo] * (1 - dw) + table[h_hi][:, w_hi] * dw
            combined = top * (1 - dh) + bottom * dh
            combined = combined.reshape(h // m, m, w // m, m, self.hidden)
            combined = combined.permute(0, 2, 1, 3, 4).reshape(1, -1, self.hidden)
            outputs.append(combined.expand(t, -1, -1).reshape(-1, self.hidden))
        return torch.cat(outputs, dim=0)

    def forward(self, pixel_patches, grid_thw):
        hidden = self.proj(pixel_patches)
        return hidden + self.fast_pos_embed_interpolate(grid_thw)


class VisionTower(nn.Module):
    def __init__(self, patch_dim=48, hidden=64, depth=2, heads=4):
        super().__init__()
        self.embed = VisionPatchEmbedder(patch_dim, hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth)

    def forward(self, pixel_patches, grid_thw):
        x = self.embed(pixel_patches, grid_thw)
        return self.blocks(x.unsqueeze(0)).squeeze(0)


def make_inputs(device, patch_dim=48):
    grids = [[1, 8, 12], [2, 4, 4], [1, 10, 6]]
    n_patches = sum(t * h * w for t, h, w in grids)
    pixels = torch.randn(n_patches, patch_dim, device=device)
    return pixels, torch.tensor(grids, device=device)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tower = VisionTower().to(device).train()
    opt = torch.optim.AdamW(tower.parameters(), lr=1e-4)
    for step in range(3):
        pixels, grid_thw = make_inputs(device)
        feats = tower(pixels, grid_thw)
        loss = feats.pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("vision tokens:", tuple(feats.shape), "loss", loss.item())


if __name__ == "__main__":
    main()
