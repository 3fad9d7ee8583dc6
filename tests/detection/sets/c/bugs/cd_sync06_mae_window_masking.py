# source: https://dev.to/ingero/tracing-a-13x-pytorch-slowdown-to-a-hidden-numpy-synchronization-4fho
# area: transfer & sync
# bug: window masking pulls the kept indices to the host with .cpu().numpy() once per sample inside the forward pass, stalling the GPU B times per batch
import numpy as np
import torch
import torch.nn as nn


class PatchEmbed(nn.Module):
    def __init__(self, img_size=64, patch=8, in_ch=3, dim=96):
        super().__init__()
        self.proj = nn.Conv2d(in_ch, dim, patch, stride=patch)
        self.num_patches = (img_size // patch) ** 2

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class MaskedAutoencoder(nn.Module):
    def __init__(self, img_size=64, patch=8, dim=96, mask_ratio=0.75):
        super().__init__()
        self.patch = patch
        self.embed = PatchEmbed(img_size, patch, 3, dim)
        self.mask_ratio = mask_ratio
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dim))
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=2 * dim, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.decoder = nn.Linear(dim, patch * patch * 3)

    def window_masking(self, x):
        B, L, D = x.shape
        len_keep = int(L * (1 - self.mask_ratio))
        noise = torch.rand(B, L, device=x.device)
        index_keep = torch.argsort(noise, dim=1)[:, :len_keep]
        index_all = np.arange(L)
        index_mask = np.zeros((B, L - len_keep), dtype=np.int64)
        for i in range(B):
            index_mask[i] = np.setdiff1d(index_all, index_keep.cpu().numpy()[i])  # expect: any
        index_mask = torch.from_numpy(index_mask).to(x.device)
        x_masked = x.clone()
        rows = torch.arange(B, device=x.device)[:, None]
        x_masked[rows, index_mask] = self.mask_token.to(x.dtype).squeeze(0)
        mask = torch.zeros(B, L, device=x.device)
        mask[rows, index_mask] = 1.0
        return x_masked, mask

    def patchify(self, imgs):
        p = self.patch
        B, C, H, W = imgs.shape
        x = imgs.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(B, (H // p) * (W // p), p * p * C)

    def forward(self, imgs):
        tokens = self.embed(imgs)
        tokens, mask = self.window_masking(tokens)
        pred = self.decoder(self.encoder(tokens))
        target = self.patchify(imgs)
        loss = ((pred - target) ** 2).mean(dim=-1)
        return (loss * mask).sum() / mask.sum()


def train_one_epoch(model, images, optimizer, batch_size, device):
    model.train()
    running = torch.zeros((), device=device)
    for start in range(0, images.shape[0], batch_size):
        batch = images[start:start + batch_size].to(device)
        loss = model(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
    return running


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = MaskedAutoencoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1.5e-4, weight_decay=0.05)
    images = torch.rand(48, 3, 64, 64)
    for epoch in range(2):
        total = train_one_epoch(model, images, optimizer, batch_size=16, device=device)
        print(f"epoch {epoch}: summed loss {total.item():.4f}")
