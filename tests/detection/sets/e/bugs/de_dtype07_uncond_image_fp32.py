# source: https://github.com/cubiq/ComfyUI_IPAdapter_plus/issues/151
# area: dtype
# bug: the image encoder is loaded in float16 on the GPU, but the blank "unconditional" image is created with torch.zeros in the default float32 and fed to it, giving "expected scalar type Half but found Float"
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model_dtype = torch.float16 if device.type == "cuda" else torch.float32


class TinyVisionEncoder(nn.Module):
    def __init__(self, embed_dim=64):
        super().__init__()
        self.patch = nn.Conv2d(3, embed_dim, kernel_size=16, stride=16)
        self.norm = nn.LayerNorm(embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, pixels):
        tokens = self.patch(pixels).flatten(2).transpose(1, 2)
        return self.proj(self.norm(tokens).mean(dim=1))


class ImageProjModel(nn.Module):
    def __init__(self, clip_dim=64, cross_dim=96, tokens=4):
        super().__init__()
        self.tokens = tokens
        self.proj = nn.Linear(clip_dim, cross_dim * tokens)
        self.norm = nn.LayerNorm(cross_dim)

    def forward(self, emb):
        return self.norm(self.proj(emb).view(emb.shape[0], self.tokens, -1))


class IPAdapterEncoder:
    MEAN = (0.4815, 0.4578, 0.4082)
    STD = (0.2686, 0.2613, 0.2758)

    def __init__(self, clip_vision, image_proj):
        self.clip_vision = clip_vision.to(device=device, dtype=model_dtype).eval()
        self.image_proj = image_proj.to(device=device, dtype=model_dtype).eval()
        self.mean = torch.tensor(self.MEAN, device=device, dtype=model_dtype).view(1, 3, 1, 1)
        self.std = torch.tensor(self.STD, device=device, dtype=model_dtype).view(1, 3, 1, 1)

    def preprocess(self, image_bhwc):
        x = image_bhwc.to(device=device, dtype=model_dtype).permute(0, 3, 1, 2)
        return (x - self.mean) / self.std

    @torch.no_grad()
    def encode(self, image_bhwc):
        cond = self.clip_vision(self.preprocess(image_bhwc))
        batch_size = image_bhwc.shape[0]
        blank = torch.zeros([batch_size, 3, 224, 224], device=device)  # expect: any
        uncond = self.clip_vision(blank)
        return self.image_proj(cond), self.image_proj(uncond)


def load_reference_images(n=2):
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 224, 224, 3, generator=g)


if __name__ == "__main__":
    torch.manual_seed(0)
    adapter = IPAdapterEncoder(TinyVisionEncoder(), ImageProjModel())
    cond, uncond = adapter.encode(load_reference_images())
    print("cond", tuple(cond.shape), cond.dtype, "uncond", tuple(uncond.shape))
