# source: https://github.com/huixiancheng/CENet/issues/8
# area: porting & distributed
# bug: the loss is computed inside the DataParallel-wrapped forward, so with several GPUs it comes back as one value per GPU and backward() fails
import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_CLASSES = 6
IGNORE_INDEX = 0


class RangeImageSegNet(nn.Module):
    def __init__(self, in_ch=5, width=24):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(in_ch, width, 3, padding=1), nn.BatchNorm2d(width), nn.LeakyReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(width, width * 2, 3, stride=2, padding=1),
                                  nn.BatchNorm2d(width * 2), nn.LeakyReLU())
        self.up = nn.ConvTranspose2d(width * 2, width, 2, stride=2)
        self.head = nn.Conv2d(width * 2, NUM_CLASSES, 1)

    def forward(self, x):
        f1 = self.enc1(x)
        f2 = self.up(self.enc2(f1))
        return self.head(torch.cat([f1, f2], dim=1))


class SegmentationWithLoss(nn.Module):
    def __init__(self, net, class_weights):
        super().__init__()
        self.net = net
        self.register_buffer("class_weights", class_weights)

    def forward(self, proj_in, proj_labels):
        logits = self.net(proj_in)
        loss = F.cross_entropy(logits, proj_labels, weight=self.class_weights,
                               ignore_index=IGNORE_INDEX)
        return loss  # expect[w]: any


def synthetic_scans(n_batches=4, batch=8, h=16, w=64):
    g = torch.Generator().manual_seed(11)
    for _ in range(n_batches):
        proj_in = torch.randn(batch, 5, h, w, generator=g)
        proj_labels = torch.randint(0, NUM_CLASSES, (batch, h, w), generator=g)
        yield proj_in, proj_labels


def train(epochs=2):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    weights = torch.tensor([0.0, 1.0, 2.0, 1.5, 1.0, 3.0])
    model = SegmentationWithLoss(RangeImageSegNet(), weights).to(device)
    if torch.cuda.device_count() > 1:
        print(f"Using {torch.cuda.device_count()} GPUs")
        model = nn.DataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")

    for epoch in range(epochs):
        epoch_loss = torch.zeros((), device=device)
        steps = 0
        for proj_in, proj_labels in synthetic_scans():
            proj_in = proj_in.to(device)
            proj_labels = proj_labels.to(device)
            with torch.autocast(device_type=device.type, enabled=device.type == "cuda"):
                loss = model(proj_in, proj_labels)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()  # expect[w]: any
            scaler.step(optimizer)
            scaler.update()
            epoch_loss += loss.detach()
            steps += 1
        print(f"epoch {epoch}: mean loss {(epoch_loss / steps).item():.4f}")


if __name__ == "__main__":
    train()
