# source: https://github.com/LeapLabTHU/ACmix/issues/18
# area: dtype
# bug: the relative-position grid is built with linspace in the default float32 dtype; during validation the model is converted to half on the GPU, so conv_p gets float input with half weights and raises a dtype error
import torch
import torch.nn as nn
import torch.nn.functional as F


def position(h, w, device):
    loc_w = torch.linspace(-1.0, 1.0, w, device=device).unsqueeze(0).repeat(h, 1)  # expect[pe]: any
    loc_h = torch.linspace(-1.0, 1.0, h, device=device).unsqueeze(1).repeat(1, w)  # expect[pe]: any
    return torch.cat([loc_w.unsqueeze(0), loc_h.unsqueeze(0)], 0).unsqueeze(0)


class ACmix(nn.Module):
    def __init__(self, channels, heads=4, kernel_att=5, kernel_conv=3):
        super().__init__()
        self.heads = heads
        self.head_dim = channels // heads
        self.kernel_att = kernel_att
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.conv_p = nn.Conv2d(2, self.head_dim, 1)
        self.fc = nn.Conv2d(3 * heads, kernel_conv * kernel_conv, 1, bias=False)
        self.dep_conv = nn.Conv2d(kernel_conv * kernel_conv * self.head_dim, channels, kernel_conv,
                                  padding=kernel_conv // 2, groups=self.head_dim)
        self.rate1 = nn.Parameter(torch.tensor(0.5))
        self.rate2 = nn.Parameter(torch.tensor(0.5))

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=1)
        scale = self.head_dim ** -0.5
        pe = self.conv_p(position(h, w, x.device))  # expect[pe]: any
        q = q.reshape(b * self.heads, self.head_dim, h, w) * scale
        k = k.reshape(b * self.heads, self.head_dim, h, w)
        v = v.reshape(b * self.heads, self.head_dim, h, w)
        pad = self.kernel_att // 2
        unfold = lambda t: F.unfold(F.pad(t, [pad] * 4, mode="reflect"), self.kernel_att).view(
            b * self.heads, self.head_dim, self.kernel_att ** 2, h, w)
        k_rel = unfold(k + pe)
        attn = ((q + pe).unsqueeze(2) * k_rel).sum(1).softmax(dim=1)
        out_att = (attn.unsqueeze(1) * unfold(v)).sum(2).view(b, c, h, w)
        f = self.fc(torch.cat([t.view(b, self.heads, self.head_dim, h * w) for t in (q, k, v)], 1))
        f = f.permute(0, 2, 1, 3)
        out_conv = self.dep_conv(f.reshape(b, -1, h, w))
        return self.rate1 * out_att + self.rate2 * out_conv


class TinyDetector(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.SiLU())
        self.mix = ACmix(32)
        self.head = nn.Conv2d(32, 5 + num_classes, 1)

    def forward(self, x):
        return self.head(self.mix(self.stem(x)))


@torch.no_grad()
def validate(model, device, batches=3):
    half = device.type != "cpu"
    model.eval()
    if half:
        model.half()
    objectness = []
    for _ in range(batches):
        im = torch.rand(4, 3, 64, 64, device=device)
        im = im.half() if half else im.float()
        pred = model(im)
        objectness.append(pred[:, 4].sigmoid().mean().float())
    model.float()
    return torch.stack(objectness).mean().item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinyDetector().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(2):
        x = torch.rand(4, 3, 64, 64, device=device)
        loss = model(x).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print(f"mean objectness on val: {validate(model, device):.4f}")


if __name__ == "__main__":
    main()
