# source: https://github.com/fbcotter/pytorch_wavelets/pull/51
# area: AMP
# bug: the custom Haar DWT autograd.Function has no custom_fwd/custom_bwd, so under CUDA autocast the forward emits float16 while backward runs without autocast and conv_transpose2d mixes a half grad with float32 filters
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def haar_filters():
    s = 1.0 / math.sqrt(2.0)
    lo = torch.tensor([s, s])
    hi = torch.tensor([s, -s])
    bank = [torch.outer(a, b) for a in (lo, hi) for b in (lo, hi)]
    return torch.stack(bank).unsqueeze(1)


class HaarDWTFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, filters):  # expect[nocast]: any
        channels = x.shape[1]
        ctx.channels = channels
        ctx.save_for_backward(filters)
        weight = filters.repeat(channels, 1, 1, 1)
        return F.conv2d(x, weight, stride=2, groups=channels)

    @staticmethod
    def backward(ctx, grad_out):  # expect[nocast]: any
        (filters,) = ctx.saved_tensors
        weight = filters.repeat(ctx.channels, 1, 1, 1)
        grad_x = F.conv_transpose2d(grad_out, weight, stride=2, groups=ctx.channels)
        return grad_x, None


class DWTForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("filters", haar_filters())

    def forward(self, x):
        return HaarDWTFunction.apply(x, self.filters)


class WaveletTextureNet(nn.Module):
    def __init__(self, in_ch=3, width=8, num_classes=6):
        super().__init__()
        self.stem = nn.Conv2d(in_ch, width, 3, padding=1)
        self.dwt1 = DWTForward()
        self.mix1 = nn.Conv2d(4 * width, width, 1)
        self.dwt2 = DWTForward()
        self.mix2 = nn.Conv2d(4 * width, 2 * width, 1)
        self.fc = nn.Linear(2 * width, num_classes)

    def forward(self, x):
        h = F.relu(self.stem(x))
        h = F.relu(self.mix1(self.dwt1(h)))
        h = F.relu(self.mix2(self.dwt2(h)))
        return self.fc(h.mean(dim=(2, 3)))


def run(device, epochs=2, steps=5, batch=8):
    use_amp = device.type == "cuda"
    model = WaveletTextureNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for _ in range(steps):
            images = torch.randn(batch, 3, 32, 32, device=device)
            labels = torch.randint(0, 6, (batch,), device=device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                loss = F.cross_entropy(model(images), labels)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            total += loss.detach()
        print(f"epoch {epoch} loss {(total / steps).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    run(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
