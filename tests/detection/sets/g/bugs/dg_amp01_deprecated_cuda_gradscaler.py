# source: https://github.com/MIC-DKFZ/nnUNet/pull/2684
# area: AMP
# bug: the trainer builds its loss scaler with the deprecated torch.cuda.amp.GradScaler(), which emits a FutureWarning on every CUDA run and is slated for removal; torch.amp.GradScaler("cuda") is the supported API
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyUNet(nn.Module):
    def __init__(self, in_ch=1, n_classes=3, width=8):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(in_ch, width, 3, padding=1), nn.InstanceNorm2d(width), nn.LeakyReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(width, width * 2, 3, stride=2, padding=1), nn.LeakyReLU())
        self.up = nn.ConvTranspose2d(width * 2, width, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(width * 2, width, 3, padding=1), nn.LeakyReLU())
        self.head = nn.Conv2d(width, n_classes, 1)

    def forward(self, x):
        s1 = self.enc1(x)
        s2 = self.enc2(s1)
        u = self.up(s2)
        return self.head(self.dec(torch.cat([u, s1], dim=1)))


def soft_dice_loss(logits, target, n_classes, eps=1e-5):
    probs = logits.float().softmax(dim=1)
    onehot = F.one_hot(target, n_classes).permute(0, 3, 1, 2).float()
    inter = (probs * onehot).sum(dim=(0, 2, 3))
    denom = probs.sum(dim=(0, 2, 3)) + onehot.sum(dim=(0, 2, 3))
    return 1.0 - ((2 * inter + eps) / (denom + eps)).mean()


class SegmentationTrainer:
    def __init__(self, device, n_classes=3, lr=1e-2, num_iterations=6):
        self.device = device
        self.n_classes = n_classes
        self.lr = lr
        self.num_iterations = num_iterations
        self.network = None
        self.optimizer = None
        self.grad_scaler = None

    def initialize(self):
        self.network = TinyUNet(n_classes=self.n_classes).to(self.device)
        self.optimizer = torch.optim.SGD(self.network.parameters(), lr=self.lr, momentum=0.99, nesterov=True)
        self.grad_scaler = torch.cuda.amp.GradScaler() if self.device.type == "cuda" else None  # expect: any

    def train_step(self, data, target):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(self.device.type, enabled=self.device.type == "cuda"):
            logits = self.network(data)
            loss = F.cross_entropy(logits, target) + soft_dice_loss(logits, target, self.n_classes)
        if self.grad_scaler is not None:
            self.grad_scaler.scale(loss).backward()
            self.grad_scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), 12)
            self.grad_scaler.step(self.optimizer)
            self.grad_scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), 12)
            self.optimizer.step()
        return loss.detach()

    def run_training(self, batches):
        self.initialize()
        self.network.train()
        losses = []
        for it in range(self.num_iterations):
            data, target = batches[it % len(batches)]
            losses.append(self.train_step(data.to(self.device), target.to(self.device)))
        return torch.stack(losses).mean().item()


def make_batches(n=3, bs=2, size=32, n_classes=3):
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(bs, 1, size, size, generator=g),
             torch.randint(0, n_classes, (bs, size, size), generator=g)) for _ in range(n)]


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = SegmentationTrainer(device)
    print("mean train loss:", trainer.run_training(make_batches()))
