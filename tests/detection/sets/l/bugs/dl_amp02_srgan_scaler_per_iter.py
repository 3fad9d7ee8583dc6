# source: https://github.com/neosr-project/neosr/pull/31
# area: AMP
# bug: a new GradScaler is built inside every optimize_parameters call, so on a GPU the loss scale never backs off after an fp16 overflow (or grows) and overflowing steps are skipped again and again
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CompactSR(nn.Module):
    def __init__(self, nf=32, n_blocks=4, scale=2):
        super().__init__()
        layers = [nn.Conv2d(3, nf, 3, padding=1), nn.PReLU(nf)]
        for _ in range(n_blocks):
            layers += [nn.Conv2d(nf, nf, 3, padding=1), nn.PReLU(nf)]
        layers += [nn.Conv2d(nf, 3 * scale * scale, 3, padding=1), nn.PixelShuffle(scale)]
        self.body = nn.Sequential(*layers)
        self.up = nn.Upsample(scale_factor=scale, mode="nearest")

    def forward(self, x):
        return self.body(x) + self.up(x)


class PatchDiscriminator(nn.Module):
    def __init__(self, nf=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, nf, 4, 2, 1), nn.LeakyReLU(0.2, True),
            nn.Conv2d(nf, nf * 2, 4, 2, 1), nn.LeakyReLU(0.2, True),
            nn.Conv2d(nf * 2, 1, 3, 1, 1),
        )

    def forward(self, x):
        return self.net(x)


class SRGANModel:
    def __init__(self, opt):
        self.opt = opt
        self.net_g = CompactSR(scale=opt["scale"]).to(device)
        self.net_d = PatchDiscriminator().to(device)
        self.optimizer_g = torch.optim.Adam(self.net_g.parameters(), lr=opt["lr_g"], betas=(0.9, 0.99))
        self.optimizer_d = torch.optim.Adam(self.net_d.parameters(), lr=opt["lr_d"], betas=(0.9, 0.99))
        self.cri_pix = nn.L1Loss()
        self.cri_gan = nn.BCEWithLogitsLoss()
        self.use_amp = opt["use_amp"] and device.type == "cuda"
        self.amp_dtype = torch.float16
        self.log_dict = {}

    def feed_data(self, lq, gt):
        self.lq = lq.to(device)
        self.gt = gt.to(device)

    def optimize_parameters(self, current_iter):
        scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)  # expect: any

        for p in self.net_d.parameters():
            p.requires_grad = False
        self.optimizer_g.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=self.amp_dtype, enabled=self.use_amp):
            self.output = self.net_g(self.lq)
            l_g_pix = self.cri_pix(self.output, self.gt)
            fake_g_pred = self.net_d(self.output)
            l_g_gan = self.cri_gan(fake_g_pred, torch.ones_like(fake_g_pred))
            l_g_total = l_g_pix + self.opt["gan_weight"] * l_g_gan
        scaler.scale(l_g_total).backward()
        scaler.step(self.optimizer_g)

        for p in self.net_d.parameters():
            p.requires_grad = True
        self.optimizer_d.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=self.amp_dtype, enabled=self.use_amp):
            real_d_pred = self.net_d(self.gt)
            fake_d_pred = self.net_d(self.output.detach())
            l_d_real = self.cri_gan(real_d_pred, torch.ones_like(real_d_pred))
            l_d_fake = self.cri_gan(fake_d_pred, torch.zeros_like(fake_d_pred))
        scaler.scale(l_d_real).backward()
        scaler.scale(l_d_fake).backward()
        scaler.step(self.optimizer_d)
        scaler.update()

        self.log_dict = {"l_g_pix": l_g_pix.detach(), "l_g_gan": l_g_gan.detach(),
                         "l_d_real": l_d_real.detach(), "l_d_fake": l_d_fake.detach()}


def synthetic_pairs(n_iters, batch=4, hr=32, scale=2):
    for _ in range(n_iters):
        gt = torch.rand(batch, 3, hr, hr)
        lq = nn.functional.interpolate(gt, scale_factor=1 / scale, mode="bicubic", align_corners=False)
        yield lq.clamp(0, 1), gt


if __name__ == "__main__":
    torch.manual_seed(0)
    opt = {"scale": 2, "lr_g": 2e-4, "lr_d": 1e-4, "gan_weight": 0.1, "use_amp": True}
    model = SRGANModel(opt)
    for it, (lq, gt) in enumerate(synthetic_pairs(8), start=1):
        model.feed_data(lq, gt)
        model.optimize_parameters(it)
    print({k: round(v.item(), 4) for k, v in model.log_dict.items()})
