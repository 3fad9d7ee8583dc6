# twin of: bugs/dk_amp09_style_loss_gram_fp16.py
# area: AMP
# correct: the Gram matrix is computed in float32 with autocast locally disabled, so the large feature products cannot overflow
import torch
import torch.nn as nn
import torch.nn.functional as F

CAFFE_MEAN = torch.tensor([103.939, 116.779, 123.68]).view(1, 3, 1, 1)


class FeatureExtractor(nn.Module):
    """Small VGG-style stack standing in for a frozen perceptual network."""

    def __init__(self):
        super().__init__()
        self.slice1 = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU())
        self.slice2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU())
        self.slice3 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())
        self.requires_grad_(False)

    def forward(self, x):
        f1 = self.slice1(x)
        f2 = self.slice2(f1)
        f3 = self.slice3(f2)
        return {"relu1_2": f1, "relu2_1": f2, "relu3_1": f3}


class StyleLoss(nn.Module):
    def __init__(self, extractor, layers=("relu1_2", "relu2_1", "relu3_1")):
        super().__init__()
        self.extractor = extractor
        self.layers = layers
        self.criterion = nn.L1Loss()
        self.register_buffer("mean", CAFFE_MEAN.clone())

    @staticmethod
    def compute_gram(x):
        b, ch, h, w = x.size()
        with torch.autocast(device_type=x.device.type, enabled=False):
            f = x.float().view(b, ch, h * w)
            f_t = f.transpose(1, 2)
            return f.bmm(f_t) / (h * w * ch)

    def forward(self, pred, target):
        pred_feats = self.extractor(pred - self.mean)
        target_feats = self.extractor(target - self.mean)
        loss = 0.0
        for name in self.layers:
            loss = loss + self.criterion(self.compute_gram(pred_feats[name]), self.compute_gram(target_feats[name]))
        return loss


class InpaintGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(4, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 3, 3, padding=1),
        )

    def forward(self, image, mask):
        out = torch.sigmoid(self.net(torch.cat([image * (1 - mask), mask], dim=1))) * 255.0
        return out * mask + image * (1 - mask)


def train(steps=4, batch=4, size=48):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    generator = InpaintGenerator().to(device)
    style_loss = StyleLoss(FeatureExtractor()).to(device)
    optimizer = torch.optim.Adam(generator.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    images = torch.rand(steps * batch, 3, size, size) * 255.0
    history = []
    for i in range(steps):
        img = images[i * batch:(i + 1) * batch].to(device)
        mask = torch.zeros(batch, 1, size, size, device=device)
        mask[:, :, size // 4: 3 * size // 4, size // 4: 3 * size // 4] = 1.0
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            pred = generator(img, mask)
            l_rec = F.l1_loss(pred, img) / 255.0
            l_style = style_loss(pred, img)
            loss = l_rec + 120.0 * l_style
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        history.append(torch.stack([l_rec.detach().float(), l_style.detach().float()]))
    return torch.stack(history).cpu()


if __name__ == "__main__":
    torch.manual_seed(0)
    hist = train()
    print("final rec/style:", [round(v, 5) for v in hist[-1].tolist()])
