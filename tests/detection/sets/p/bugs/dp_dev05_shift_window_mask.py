# source: https://github.com/huggingface/transformers/issues/31294
# area: device placement
# bug: the shifted-window attention mask is rebuilt on the CPU in every block's forward and then copied to the GPU
import torch
import torch.nn as nn


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ws, ws, c)


def window_reverse(windows, ws, h, w):
    b = windows.shape[0] // ((h // ws) * (w // ws))
    x = windows.view(b, h // ws, w // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)


class ShiftedWindowBlock(nn.Module):
    def __init__(self, dim, heads, window_size, shift_size):
        super().__init__()
        self.ws, self.shift = window_size, shift_size
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def get_attn_mask(self, height, width, dtype):
        if self.shift == 0:
            return None
        img_mask = torch.zeros((1, height, width, 1), dtype=dtype)  # expect[m]: any
        spans = (slice(0, -self.ws), slice(-self.ws, -self.shift), slice(-self.shift, None))
        cnt = 0
        for hs in spans:
            for wsl in spans:
                img_mask[:, hs, wsl, :] = cnt
                cnt += 1
        mask_windows = window_partition(img_mask, self.ws).view(-1, self.ws * self.ws)
        attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
        return attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, 0.0)

    def forward(self, hidden):
        b, h, w, c = hidden.shape
        shortcut = hidden
        x = self.norm1(hidden)
        if self.shift > 0:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        windows = window_partition(x, self.ws).view(-1, self.ws * self.ws, c)
        attn_mask = self.get_attn_mask(h, w, dtype=hidden.dtype)
        if attn_mask is not None:
            attn_mask = attn_mask.to(hidden.device)  # expect[m]: any
            n_win = attn_mask.shape[0]
            attn_mask = attn_mask.repeat(b, 1, 1).repeat_interleave(self.attn.num_heads, dim=0)
            attn_mask = attn_mask.view(b * n_win * self.attn.num_heads, self.ws * self.ws, -1)
        out, _ = self.attn(windows, windows, windows, attn_mask=attn_mask, need_weights=False)
        x = window_reverse(out.view(-1, self.ws, self.ws, c), self.ws, h, w)
        if self.shift > 0:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + x
        return x + self.mlp(self.norm2(x))


class TinySwinStage(nn.Module):
    def __init__(self, in_ch=3, dim=32, depth=4, heads=2, window_size=4, n_classes=5):
        super().__init__()
        self.patch = nn.Conv2d(in_ch, dim, kernel_size=4, stride=4)
        self.blocks = nn.ModuleList(
            ShiftedWindowBlock(dim, heads, window_size, 0 if i % 2 == 0 else window_size // 2)
            for i in range(depth)
        )
        self.head = nn.Linear(dim, n_classes)

    def forward(self, img):
        x = self.patch(img).permute(0, 2, 3, 1)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x.mean(dim=(1, 2)))


@torch.inference_mode()
def run_inference(model, batches, device):
    model.eval()
    preds = [model(x.to(device)).argmax(-1) for x in batches]
    return torch.cat(preds)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinySwinStage().to(device)
    batches = [torch.randn(4, 3, 32, 32) for _ in range(6)]
    preds = run_inference(model, batches, device)
    print("predicted classes:", preds.cpu().tolist())
