# source: https://github.com/google-research/big_transfer/issues/73
# area: porting & distributed
# bug: the model is moved to the "least busy" GPU (e.g. cuda:1) but nn.DataParallel is built without device_ids, so device_ids[0] is cuda:0 and forward raises "module must have its parameters and buffers on device cuda:0"
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] bit_common: %(message)s")
logger = logging.getLogger("bit")


def pick_device():
    if not torch.cuda.is_available():
        return torch.device("cpu")
    free = []
    for idx in range(torch.cuda.device_count()):
        free_bytes, _ = torch.cuda.mem_get_info(idx)
        free.append((free_bytes, idx))
    best = max(free)[1]
    return torch.device("cuda", best)


class StdConv2d(nn.Conv2d):
    def forward(self, x):
        w = self.weight
        v, m = torch.var_mean(w, dim=[1, 2, 3], keepdim=True, correction=0)
        w = (w - m) / torch.sqrt(v + 1e-10)
        return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ResNetV2Tiny(nn.Module):
    def __init__(self, head_size=10, width=16):
        super().__init__()
        self.root = StdConv2d(3, width, 3, padding=1, bias=False)
        self.body = nn.Sequential(nn.GroupNorm(4, width), nn.ReLU(),
                                  StdConv2d(width, width * 2, 3, stride=2, padding=1, bias=False),
                                  nn.GroupNorm(8, width * 2), nn.ReLU())
        self.head = nn.Conv2d(width * 2, head_size, 1)

    def forward(self, x):
        x = self.body(self.root(x))
        return self.head(F.adaptive_avg_pool2d(x, 1)).flatten(1)


def mixup_data(x, y, lam):
    idx = torch.randperm(x.shape[0], device=x.device)
    return lam * x + (1 - lam) * x[idx], y, y[idx]


def main():
    device = pick_device()
    logger.info(f"Going to train on {device}")
    model = ResNetV2Tiny()
    logger.info("Moving model onto all GPUs")
    model = nn.DataParallel(model)  # expect: any
    model = model.to(device)
    optim = torch.optim.SGD(model.parameters(), lr=0.003, momentum=0.9)
    g = torch.Generator().manual_seed(0)
    model.train()
    logger.info("Starting training!")
    for step in range(6):
        x = torch.randn(8, 3, 32, 32, generator=g).to(device)
        y = torch.randint(0, 10, (8,), generator=g).to(device)
        x, ya, yb = mixup_data(x, y, lam=0.7)
        logits = model(x)
        loss = 0.7 * F.cross_entropy(logits, ya) + 0.3 * F.cross_entropy(logits, yb)
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
    logger.info(f"[step {step}]: loss={loss.item():.5f}")


if __name__ == "__main__":
    main()
