# source: https://github.com/huggingface/accelerate/issues/439
# area: AMP
# bug: each wrapped optimizer calls scaler.update() right after its own step, so on a GPU the shared scale can change before the second optimizer unscales gradients that were produced with the old scale
import torch
import torch.nn as nn
import torch.nn.functional as F


class MixedPrecisionOptimizer:
    """Thin wrapper so the training loop does not have to know about loss scaling."""

    def __init__(self, optimizer, scaler):
        self.optimizer = optimizer
        self.scaler = scaler

    def step(self):
        self.scaler.step(self.optimizer)
        self.scaler.update()  # expect: any

    def zero_grad(self):
        self.optimizer.zero_grad(set_to_none=True)


class ImageTower(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.proj = nn.Linear(32, dim)

    def forward(self, x):
        return self.proj(self.conv(x).flatten(1))


class TextTower(nn.Module):
    def __init__(self, vocab=200, dim=64):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, 96)
        self.proj = nn.Sequential(nn.Linear(96, 96), nn.GELU(), nn.Linear(96, dim))

    def forward(self, ids):
        return self.proj(self.emb(ids))


def contrastive_loss(img_emb, txt_emb, logit_scale):
    img_emb = F.normalize(img_emb.float(), dim=-1)
    txt_emb = F.normalize(txt_emb.float(), dim=-1)
    logits = logit_scale * img_emb @ txt_emb.t()
    labels = torch.arange(logits.shape[0], device=logits.device)
    return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels))


def build(device, use_amp):
    image_tower, text_tower = ImageTower().to(device), TextTower().to(device)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp, growth_interval=4)
    img_opt = MixedPrecisionOptimizer(torch.optim.AdamW(image_tower.parameters(), lr=5e-4), scaler)
    txt_opt = MixedPrecisionOptimizer(torch.optim.SGD(text_tower.parameters(), lr=0.5, momentum=0.9), scaler)
    return image_tower, text_tower, scaler, [img_opt, txt_opt]


def train(steps=10, batch=16):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    image_tower, text_tower, scaler, optimizers = build(device, use_amp)
    images = torch.rand(steps * batch, 3, 32, 32)
    captions = torch.randint(0, 200, (steps * batch, 12))
    logit_scale = 1.0 / 0.07
    losses = []
    for i in range(steps):
        img = images[i * batch:(i + 1) * batch].to(device)
        ids = captions[i * batch:(i + 1) * batch].to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            loss = contrastive_loss(image_tower(img), text_tower(ids), logit_scale)
        scaler.scale(loss).backward()
        for opt in optimizers:
            opt.step()
        for opt in optimizers:
            opt.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).cpu()


if __name__ == "__main__":
    torch.manual_seed(0)
    hist = train()
    print("first/last loss:", round(hist[0].item(), 4), round(hist[-1].item(), 4))
