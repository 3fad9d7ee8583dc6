# source: https://github.com/lbin/DCNv2/issues/2
# area: AMP
# bug: the hand-written modulated-conv autograd.Function has no custom_fwd/custom_bwd, so under fp16 autocast its forward GEMM returns half while backward (run outside autocast) multiplies the half grad with the fp32 weight and fails with a dtype mismatch on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
USE_AMP = device.type == "cuda"


class ModulatedConv2dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mask, weight, kernel_size, padding):  # expect[w]: any
        b, cin, h, w = x.shape
        kk = kernel_size * kernel_size
        cols = F.unfold(x, kernel_size, padding=padding)  # [B, Cin*kk, L]
        mod_cols = (cols.view(b, cin, kk, -1) * mask.unsqueeze(1)).view(b, cin * kk, -1)
        out = torch.matmul(weight.view(weight.shape[0], -1), mod_cols)  # [B, Cout, L]
        ctx.save_for_backward(cols, mask, weight)
        ctx.meta = (kernel_size, padding, (h, w), cin)
        return out.view(b, -1, h, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, mask, weight = ctx.saved_tensors
        kernel_size, padding, hw, cin = ctx.meta
        b, kk = cols.shape[0], kernel_size * kernel_size
        g = grad_out.flatten(2)  # [B, Cout, L]
        w2 = weight.view(weight.shape[0], -1)
        mod_cols = (cols.view(b, cin, kk, -1) * mask.unsqueeze(1)).view(b, cin * kk, -1)
        grad_w = torch.matmul(g, mod_cols.transpose(1, 2)).sum(0).view_as(weight)
        grad_cols = torch.matmul(w2.t(), g).view(b, cin, kk, -1)  # expect[w]: any
        grad_mask = (grad_cols * cols.view(b, cin, kk, -1)).sum(1)
        grad_x = F.fold((grad_cols * mask.unsqueeze(1)).view(b, cin * kk, -1), hw, kernel_size, padding=padding)
        return grad_x, grad_mask, grad_w, None, None


class ModulatedDeformBlock(nn.Module):
    """DCNv2-style block: a side branch predicts per-tap modulation masks for a 3x3 conv."""

    def __init__(self, cin, cout, k=3):
        super().__init__()
        self.k, self.pad = k, k // 2
        self.weight = nn.Parameter(torch.randn(cout, cin, k, k) * (2.0 / (cin * k * k)) ** 0.5)
        self.bias = nn.Parameter(torch.zeros(cout))
        self.mask_conv = nn.Conv2d(cin, k * k, k, padding=self.pad)

    def forward(self, x):
        mask = torch.sigmoid(self.mask_conv(x)).flatten(2)  # [B, kk, L]
        out = ModulatedConv2dFunction.apply(x, mask, self.weight, self.k, self.pad)
        return F.relu(out + self.bias.view(1, -1, 1, 1))


class SegNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
        self.dcn = ModulatedDeformBlock(16, 32)
        self.head = nn.Conv2d(32, num_classes, 1)

    def forward(self, x):
        return self.head(self.dcn(self.stem(x)))


if __name__ == "__main__":
    gen = torch.Generator(device=device).manual_seed(0)
    model = SegNet().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=USE_AMP)
    for step in range(4):
        img = torch.rand(2, 3, 32, 32, device=device, generator=gen)
        target = (img.mean(1) * 5).long().clamp(max=4)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=USE_AMP):
            loss = F.cross_entropy(model(img), target)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print("final loss", loss.detach().float().cpu().item())
