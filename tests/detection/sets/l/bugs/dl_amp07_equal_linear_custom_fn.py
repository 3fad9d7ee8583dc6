# source: https://github.com/pytorch/ao/issues/4616
# area: AMP
# bug: the hand-written autograd Function has no custom_fwd/custom_bwd, so under CUDA autocast its backward runs without autocast and multiplies the float16 grad_output by the saved float32 weight ("expected m1 and m2 to have the same dtype")
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class EqualLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, scale, lr_mul):  # expect[c]: any
        ctx.save_for_backward(x, weight)
        ctx.scale, ctx.lr_mul = scale, lr_mul
        return torch.addmm(bias * lr_mul, x, (weight * scale).t())

    @staticmethod
    def backward(ctx, grad_output):  # expect[c]: any
        x, weight = ctx.saved_tensors
        grad_input = grad_output.mm(weight * ctx.scale)  # expect[c]: any
        grad_weight = grad_output.t().mm(x) * ctx.scale
        grad_bias = grad_output.sum(0) * ctx.lr_mul
        return grad_input, grad_weight, grad_bias, None, None


class EqualLinear(nn.Module):
    """Linear layer with equalized learning rate, as in StyleGAN mapping networks."""

    def __init__(self, in_dim, out_dim, lr_mul=1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim) / lr_mul)
        self.bias = nn.Parameter(torch.zeros(out_dim))
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, x):
        return EqualLinearFunction.apply(x, self.weight, self.bias, self.scale, self.lr_mul)


class MappingNetwork(nn.Module):
    def __init__(self, z_dim=64, w_dim=64, n_layers=4, n_classes=5, lr_mul=0.01):
        super().__init__()
        dims = [z_dim] + [w_dim] * n_layers
        self.layers = nn.ModuleList(EqualLinear(a, b, lr_mul) for a, b in zip(dims[:-1], dims[1:]))
        self.cls = EqualLinear(w_dim, n_classes)

    def forward(self, z):
        x = z * torch.rsqrt(z.pow(2).mean(dim=1, keepdim=True) + 1e-8)
        for layer in self.layers:
            x = F.leaky_relu(layer(x), 0.2)
        return self.cls(x)


def train(model, steps=20, batch=64, use_amp=True):
    use_amp = use_amp and device.type == "cuda"
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.0, 0.99))
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    centers = torch.randn(5, 64, device=device) * 2
    losses = torch.zeros(steps, device=device)
    for step in range(steps):
        labels = torch.randint(0, 5, (batch,), device=device)
        z = centers[labels] + torch.randn(batch, 64, device=device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(z), labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses[step] = loss.detach()
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    net = MappingNetwork().to(device)
    losses = train(net)
    print(f"first loss {losses[0].item():.3f} -> last loss {losses[-5:].mean().item():.3f}")
