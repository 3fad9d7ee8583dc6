# source: https://github.com/ashawkey/stable-dreamfusion/issues/158
# area: AMP
# bug: the gradient-injecting autograd Function returns the precomputed SDS gradient without multiplying by grad_output, so it never carries the GradScaler scale; scaler.step then divides it by ~65536 on CUDA and the guidance term vanishes next to the scaled regulariser
import torch
import torch.nn as nn
import torch.nn.functional as F


class SpecifyGradient(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, latents, gt_grad):
        ctx.save_for_backward(gt_grad)
        return torch.ones([1], device=latents.device, dtype=latents.dtype)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad_output):
        (gt_grad,) = ctx.saved_tensors
        return gt_grad, None  # expect: any


class FrozenDenoiser(nn.Module):
    """Stand-in for a pretrained diffusion UNet: predicts noise from noisy latents."""

    def __init__(self, ch=4):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(ch + 1, 32, 3, padding=1), nn.SiLU(), nn.Conv2d(32, ch, 3, padding=1))
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, noisy, t):
        t_map = t.view(-1, 1, 1, 1).expand(-1, 1, *noisy.shape[-2:])
        return self.net(torch.cat([noisy, t_map], dim=1))


class LatentField(nn.Module):
    """Tiny learnable scene whose rendering is a 4x32x32 latent."""

    def __init__(self):
        super().__init__()
        self.grid = nn.Parameter(torch.randn(1, 8, 16, 16) * 0.1)
        self.decoder = nn.Conv2d(8, 4, 1)

    def forward(self):
        return self.decoder(F.interpolate(self.grid, scale_factor=2, mode="bilinear", align_corners=False))


def sds_step(field, denoiser, scaler, opt, device, guidance_weight=1.0, tv_weight=0.05):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=scaler.is_enabled()):
        latents = field()
        t = torch.rand(1, device=device) * 0.96 + 0.02
        noise = torch.randn_like(latents)
        noisy = latents.detach() * (1 - t).sqrt() + noise * t.sqrt()
        with torch.no_grad():
            eps_pred = denoiser(noisy, t)
        grad = guidance_weight * (1 - t) * (eps_pred - noise)
        grad = torch.nan_to_num(grad)
        loss_sds = SpecifyGradient.apply(latents, grad)
        tv = (latents[..., 1:, :] - latents[..., :-1, :]).abs().mean()
        loss = loss_sds.sum() + tv_weight * tv
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return tv.detach()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    field, denoiser = LatentField().to(device), FrozenDenoiser().to(device)
    opt = torch.optim.Adam(field.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
    tvs = [sds_step(field, denoiser, scaler, opt, device) for _ in range(10)]
    print("final tv", torch.stack(tvs)[-1].item())
