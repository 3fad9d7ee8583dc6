# source: https://github.com/jenellefeather/model_metamers_pytorch/issues/12
# area: dtype
# bug: the image tower is loaded in fp16 on the GPU (CLIP-style), but the cached class text embeddings stay float32, so the half @ float similarity matmul fails there
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyVisionTower(nn.Module):
    def __init__(self, width=32, embed_dim=48):
        super().__init__()
        self.stem = nn.Conv2d(3, width, kernel_size=4, stride=4)
        self.blocks = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1), nn.GELU(),
            nn.Conv2d(width, width, 3, padding=1), nn.GELU(),
        )
        self.proj = nn.Linear(width, embed_dim)

    def forward(self, images):
        h = self.blocks(self.stem(images))
        return self.proj(h.mean(dim=(2, 3)))


def load_vision_tower(device):
    """Mimics clip.load(): weights come back in fp16 on CUDA and fp32 on CPU."""
    model = TinyVisionTower().to(device)
    if device.type == "cuda":
        model = model.half()
    return model.eval()


def build_text_cache(path, class_names, embed_dim=48):
    gen = torch.Generator().manual_seed(3)
    table = torch.randn(len(class_names), embed_dim, generator=gen)
    torch.save({"classes": class_names, "embeddings": F.normalize(table, dim=-1)}, path)


class ZeroShotClassifier:
    def __init__(self, tower, cache_path, device, logit_scale=100.0):
        self.tower = tower
        self.device = device
        blob = torch.load(cache_path, map_location=device)
        self.classes = blob["classes"]
        self.text_emb = blob["embeddings"]
        self.logit_scale = logit_scale

    @torch.no_grad()
    def predict(self, images):
        dtype = next(self.tower.parameters()).dtype
        feats = self.tower(images.to(self.device, dtype=dtype))
        feats = feats / feats.norm(dim=-1, keepdim=True)
        logits = self.logit_scale * feats @ self.text_emb.T  # expect: any
        return logits.softmax(dim=-1)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    classes = ["cat", "dog", "car", "tree", "boat", "plane"]
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "text_cache.pt")
        build_text_cache(cache, classes)
        clf = ZeroShotClassifier(load_vision_tower(device), cache, device)
        images = torch.rand(10, 3, 64, 64)
        probs = clf.predict(images)
    top = probs.argmax(dim=-1).tolist()
    print([clf.classes[i] for i in top])


if __name__ == "__main__":
    main()
