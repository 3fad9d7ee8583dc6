# source: https://github.com/NVlabs/pacnet/issues/27
# area: AMP
# bug: the hand-written autograd Function has no custom_fwd/custom_bwd, so under CUDA autocast its backward gets an fp16 grad_output and mixes it with the fp32 saved weight in einsum, raising "expected scalar type Half but found Float"
import torch
import torch.nn as nn
import torch.nn.functional as F


class PixelAdaptiveMixFn(torch.autograd.Function):
    """out[b,o,h,w] = sum_c W[o,c] * x[b,c,h,w] * g[b,h,w], with a memory-light manual backward."""

    @staticmethod
    def forward(ctx, x, guide, weight):  # expect[cf]: any
        modulated = x * guide.unsqueeze(1)
        ctx.save_for_backward(x, guide, weight)
        return torch.einsum("bchw,oc->bohw", modulated, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, guide, weight = ctx.saved_tensors
        grad_mod = torch.einsum("bohw,oc->bchw", grad_out, weight)  # expect[cf]: any
        grad_x = grad_mod * guide.unsqueeze(1)
        grad_guide = (grad_mod * x).sum(1)
        grad_w = torch.einsum("bohw,bchw->oc", grad_out, x * guide.unsqueeze(1))
        return grad_x, grad_guide, grad_w


class PacBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cout, cin) / cin ** 0.5)
        self.guide_net = nn.Conv2d(3, 1, 3, padding=1)

    def forward(self, x, rgb):
        guide = torch.sigmoid(self.guide_net(rgb)).squeeze(1)
        return PixelAdaptiveMixFn.apply(x, guide, self.weight)


class GuidedUpsampler(nn.Module):
    def __init__(self, ch=16, classes=6):
        super().__init__()
        self.stem = nn.Conv2d(3, ch, 3, padding=1)
        self.pac = PacBlock(ch, ch)
        self.cls = nn.Conv2d(ch, classes, 1)

    def forward(self, rgb):
        feats = F.relu(self.stem(rgb))
        feats = F.relu(self.pac(feats, rgb))
        return self.cls(feats)


def run(device, steps=4):
    use_amp = device.type == "cuda"
    model = GuidedUpsampler().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    rgb = torch.rand(4, 3, 32, 32, device=device)
    target = torch.randint(0, 6, (4, 32, 32), device=device)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(rgb)
            loss = F.cross_entropy(logits, target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return loss.detach()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    print("loss", run(device).item())
