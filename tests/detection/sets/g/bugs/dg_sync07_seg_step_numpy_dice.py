# source: https://github.com/Lightning-AI/pytorch-lightning/issues/3050
# area: transfer & sync
# bug: training_step copies every batch of predicted masks to the host and post-processes them in numpy to compute a dice score, a blocking device->host copy plus CPU work on every training step
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def post_process(prob, threshold, min_size):
    """Binarise a probability map and drop it entirely if too few pixels survive."""
    mask = (prob > threshold).astype(np.float32)
    if mask.sum() < min_size:
        return np.zeros_like(mask), 0
    return mask, 1


def dice_metric(probs, truth, threshold=0.5, min_size=20):
    scores = []
    for p, t in zip(probs, truth):
        pred, _ = post_process(p, threshold, min_size)
        inter = (pred * t).sum()
        denom = pred.sum() + t.sum()
        scores.append(1.0 if denom == 0 else 2.0 * inter / denom)
    return float(np.mean(scores))


class TinyUNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(ch, 2 * ch, 3, padding=1, stride=2), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * ch, ch, 2, stride=2)
        self.out = nn.Conv2d(2 * ch, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        d = self.up(self.enc2(e1))
        return self.out(torch.cat([d, e1], dim=1))


class SegmentationModule(nn.Module):
    def __init__(self, lr=1e-3):
        super().__init__()
        self.net = TinyUNet()
        self.lr = lr
        self.logged = {}

    def log(self, name, value):
        self.logged.setdefault(name, []).append(value)

    def training_step(self, batch, batch_idx):
        image, mask = batch
        logits = self.net(image)
        loss = F.binary_cross_entropy_with_logits(logits, mask)
        train_probs = torch.sigmoid(logits).detach().cpu().numpy()[:, 0]  # expect[w]: any
        train_truth = mask.detach().cpu().numpy()[:, 0]  # expect[w]: any
        self.log("train_dice", dice_metric(train_probs, train_truth))
        self.log("train_loss", loss.detach())
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def synthetic_batch(batch_size, size, device, gen):
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    cx = torch.randint(8, size - 8, (batch_size, 1, 1), generator=gen)
    cy = torch.randint(8, size - 8, (batch_size, 1, 1), generator=gen)
    mask = (((xx - cx) ** 2 + (yy - cy) ** 2) < 36).float().unsqueeze(1)
    image = mask + 0.3 * torch.randn(mask.shape, generator=gen)
    return image.to(device), mask.to(device)


def fit(module, steps=24, batch_size=8, size=32):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    module.to(device)
    opt = module.configure_optimizers()
    gen = torch.Generator().manual_seed(0)
    batches = [synthetic_batch(batch_size, size, device, gen) for _ in range(8)]
    for step in range(steps):
        loss = module.training_step(batches[step % len(batches)], step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    dice = module.logged["train_dice"][-5:]
    print(f"last loss {module.logged['train_loss'][-1].item():.4f}, dice {np.mean(dice):.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    fit(SegmentationModule())
