# source: https://github.com/sanghyun-son/EDSR-PyTorch/issues/36
# area: dtype
# bug: on CUDA the SR model is converted to pure fp16 and trained with Adam's default eps=1e-8, which rounds to 0 in fp16; zero or tiny gradients give 0/0 updates and the weights turn NaN
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class ResBlock(nn.Module):
    def __init__(self, feats, res_scale=0.1):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(feats, feats, 3, padding=1), nn.ReLU(True),
                                  nn.Conv2d(feats, feats, 3, padding=1))
        self.res_scale = res_scale

    def forward(self, x):
        return x + self.body(x) * self.res_scale


class EDSRBaseline(nn.Module):
    def __init__(self, scale=2, feats=32, blocks=4):
        super().__init__()
        self.head = nn.Conv2d(3, feats, 3, padding=1)
        self.body = nn.Sequential(*[ResBlock(feats) for _ in range(blocks)])
        self.tail = nn.Sequential(nn.Conv2d(feats, 3 * scale * scale, 3, padding=1), nn.PixelShuffle(scale))

    def forward(self, lr):
        x = self.head(lr)
        return self.tail(x + self.body(x))


class PatchPairs(Dataset):
    def __init__(self, n=48, patch=16, scale=2, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.hr = torch.rand(n, 3, patch * scale, patch * scale, generator=g)
        self.lr = F.avg_pool2d(self.hr, scale)

    def __len__(self):
        return self.hr.shape[0]

    def __getitem__(self, i):
        return self.lr[i], self.hr[i]


class Trainer:
    def __init__(self, args, model, loader):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        if args.precision == "half":
            self.model.half()  # expect[adam]: any
        self.loader = loader
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr, betas=(0.9, 0.999))  # expect[adam]: any
        self.loss = nn.L1Loss()

    def prepare(self, *tensors):
        dtype = torch.float16 if self.args.precision == "half" else torch.float32
        return [t.to(self.device, dtype=dtype, non_blocking=True) for t in tensors]

    def train_epoch(self, epoch):
        self.model.train()
        running = torch.zeros((), device=self.device)
        for lr, hr in self.loader:
            lr, hr = self.prepare(lr, hr)
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.loss(self.model(lr), hr)
            loss.backward()
            self.optimizer.step()
            running += loss.detach().float()
        print(f"[Epoch {epoch}] L1: {(running / len(self.loader)).item():.4f}")


def main():
    torch.manual_seed(0)
    args = SimpleNamespace(lr=1e-4, epochs=3, batch_size=16,
                           precision="half" if torch.cuda.is_available() else "single")
    loader = DataLoader(PatchPairs(), batch_size=args.batch_size, shuffle=True,
                        pin_memory=torch.cuda.is_available())
    trainer = Trainer(args, EDSRBaseline(), loader)
    for epoch in range(1, args.epochs + 1):
        trainer.train_epoch(epoch)


if __name__ == "__main__":
    main()
