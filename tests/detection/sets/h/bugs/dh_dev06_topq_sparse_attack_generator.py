# source: https://github.com/mit-ll-responsible-ai/responsible-ai-toolbox/pull/64
# area: device placement
# bug: the per-sample sparsity jitter is drawn with torch.rand(..., generator=self.generator) and no device, which fails when the seeded generator lives on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TopQGradientSGD(torch.optim.Optimizer):
    """Ascends only along the largest-magnitude fraction of each sample's gradient."""

    def __init__(self, params, lr=0.05, q=0.8, dq=0.1, generator=None):
        super().__init__(params, dict(lr=lr))
        self.q = q
        self.dq = dq
        self.generator = generator if generator is not None else torch.default_generator

    def _sparsify(self, grad):
        flat = grad.flatten(1)
        jitter = 2 * torch.rand(flat.shape[0], generator=self.generator) - 1  # expect: any
        q = (self.q + self.dq * jitter).clamp(0.0, 1.0).to(flat.device)
        n_keep = ((1.0 - q) * flat.shape[1]).ceil().long().clamp(min=1)
        ranked = flat.abs().sort(dim=1, descending=True).values
        thresh = ranked.gather(1, (n_keep - 1).unsqueeze(1))
        return (flat * (flat.abs() >= thresh)).view_as(grad)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.add_(self._sparsify(p.grad).sign(), alpha=group["lr"])
        return None


class SmallCNN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 7 * 7, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def sparse_attack(model, images, labels, eps=0.3, steps=10, seed=0):
    gen = torch.Generator(device=images.device).manual_seed(seed)
    delta = torch.zeros_like(images, requires_grad=True)
    opt = TopQGradientSGD([delta], lr=eps / 4, q=0.9, dq=0.05, generator=gen)
    for _ in range(steps):
        loss = F.cross_entropy(model(images + delta), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            delta.clamp_(-eps, eps)
            delta.copy_((images + delta).clamp(0, 1) - images)
    return delta.detach()


def evaluate_robustness(model, n_batches=2, batch_size=16):
    model.eval()
    clean_correct = torch.zeros((), device=device, dtype=torch.long)
    adv_correct = torch.zeros((), device=device, dtype=torch.long)
    for b in range(n_batches):
        images = torch.rand(batch_size, 1, 28, 28, device=device)
        labels = torch.randint(0, 10, (batch_size,), device=device)
        delta = sparse_attack(model, images, labels, seed=b)
        with torch.no_grad():
            clean_correct += (model(images).argmax(1) == labels).sum()
            adv_correct += (model(images + delta).argmax(1) == labels).sum()
    total = n_batches * batch_size
    print(f"clean acc {clean_correct.item() / total:.3f}  adv acc {adv_correct.item() / total:.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    evaluate_robustness(SmallCNN().to(device))
