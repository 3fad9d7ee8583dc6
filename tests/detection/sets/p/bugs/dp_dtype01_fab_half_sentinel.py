# source: https://github.com/Harry24k/adversarial-attacks-pytorch/issues/100
# area: dtype
# bug: on the GPU the classifier is run in float16, so filling the true-class entries of the half logit-difference tensor with the 1e10 sentinel overflows float16 and raises
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
EVAL_DTYPE = torch.float16 if device.type == "cuda" else torch.float32


class SmallCNN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        )
        self.head = nn.Linear(32 * 16, n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class MinimalNormAttack:
    """FAB-style attack: linearise every wrong class and step to the closest boundary."""

    def __init__(self, model, n_classes, steps=4, overshoot=1.05):
        self.model = model
        self.n_classes = n_classes
        self.steps = steps
        self.overshoot = overshoot

    def diff_logits_grads(self, imgs, la):
        im = imgs.clone().requires_grad_(True)
        logits = self.model(im)
        grads = []
        for c in range(self.n_classes):
            g, = torch.autograd.grad(logits[:, c].sum(), im, retain_graph=True)
            grads.append(g)
        g2 = torch.stack(grads, dim=1)
        rows = torch.arange(imgs.shape[0], device=imgs.device)
        df = logits.detach() - logits.detach()[rows, la].unsqueeze(1)
        dg = g2 - g2[rows, la].unsqueeze(1)
        own_class = F.one_hot(la, self.n_classes).bool()
        df = df.masked_fill(own_class, 1e10)  # expect: any
        return df, dg

    def perturb(self, x, y):
        adv = x.clone()
        for _ in range(self.steps):
            df, dg = self.diff_logits_grads(adv, y)
            dg_norm = dg.flatten(2).norm(dim=2).clamp_min(1e-4)
            dist = df.abs() / dg_norm
            target = dist.argmin(dim=1)
            rows = torch.arange(x.shape[0], device=x.device)
            step = (df[rows, target].abs() / dg_norm[rows, target] ** 2).view(-1, 1, 1, 1)
            adv = (adv - self.overshoot * step * dg[rows, target]).clamp(0, 1).detach()
        return adv


def robust_accuracy(model, loader, attack):
    correct = torch.zeros((), device=device)
    total = 0
    for x, y in loader:
        x = x.to(device, dtype=EVAL_DTYPE)
        y = y.to(device)
        adv = attack.perturb(x, y)
        with torch.no_grad():
            correct += (model(adv).argmax(1) == y).sum()
        total += y.numel()
    return correct.item() / total


def main():
    torch.manual_seed(0)
    model = SmallCNN().to(device=device, dtype=EVAL_DTYPE).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    images = torch.rand(32, 3, 16, 16)
    labels = torch.randint(0, 10, (32,))
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images, labels), batch_size=8)
    attack = MinimalNormAttack(model, n_classes=10)
    print(f"robust accuracy: {robust_accuracy(model, loader, attack):.3f}")


if __name__ == "__main__":
    main()
