# source: https://github.com/jingyuanli001/RFR-Inpainting/issues/8
# area: AMP
# bug: under CUDA autocast the mask-update conv returns float16, where the 1e-8 epsilon rounds to 0, so fully masked windows give 9/0 = inf and inf*0 = NaN in the partial-conv output
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PartialConv2d(nn.Conv2d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        kh, kw = self.kernel_size
        self.register_buffer("weight_mask_updater", torch.ones(1, 1, kh, kw))
        self.slide_winsize = float(kh * kw)

    def forward(self, x, mask):
        with torch.no_grad():
            update_mask = F.conv2d(mask, self.weight_mask_updater, bias=None, stride=self.stride,
                                   padding=self.padding, dilation=self.dilation)
            mask_ratio = self.slide_winsize / (update_mask + 1e-8)  # expect: any
            update_mask = torch.clamp(update_mask, 0, 1)
            mask_ratio = mask_ratio * update_mask

        raw_out = super().forward(x * mask)
        bias_view = self.bias.view(1, -1, 1, 1)
        out = (raw_out - bias_view) * mask_ratio + bias_view
        return out * update_mask, update_mask


class InpaintNet(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.enc1 = PartialConv2d(3, ch, 3, padding=1)
        self.enc2 = PartialConv2d(ch, ch, 3, stride=2, padding=1)
        self.enc3 = PartialConv2d(ch, ch, 3, padding=1)
        self.dec = PartialConv2d(ch + 3, 3, 3, padding=1)

    def forward(self, image, mask):
        x1, m1 = self.enc1(image, mask)
        x2, m2 = self.enc2(F.relu(x1), m1)
        x3, m3 = self.enc3(F.relu(x2), m2)
        up = F.interpolate(x3, scale_factor=2, mode="nearest")
        m_up = F.interpolate(m3, scale_factor=2, mode="nearest")
        m_dec = torch.maximum(m_up, mask)
        out, _ = self.dec(torch.cat([up, image], 1), m_dec)
        return torch.sigmoid(out)


def random_hole_masks(batch, size=32, hole=12):
    mask = torch.ones(batch, 1, size, size, device=device)
    for i in range(batch):
        y, x = torch.randint(0, size - hole, (2,)).tolist()
        mask[i, :, y:y + hole, x:x + hole] = 0
    return mask


def train_step(model, optimizer, scaler, image, mask, use_amp):
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
        pred = model(image * mask, mask)
        hole = 1 - mask
        loss = F.l1_loss(pred * hole, image * hole) * 6 + F.l1_loss(pred * mask, image * mask)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()


if __name__ == "__main__":
    torch.manual_seed(0)
    use_amp = device.type == "cuda"
    model = InpaintNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    losses = []
    for it in range(6):
        image = torch.rand(8, 3, 32, 32, device=device)
        mask = random_hole_masks(8)
        losses.append(train_step(model, optimizer, scaler, image, mask, use_amp))
    print("mean loss:", torch.stack(losses).mean().item())
