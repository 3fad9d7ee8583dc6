# source: https://github.com/kornia/kornia/issues/4657
# area: dtype
# bug: the mixup helper packs class ids into a tensor of the image dtype; on the GPU images are float16, so class ids above 2048 are rounded and the loss is computed against the wrong classes
import torch
import torch.nn as nn
import torch.nn.functional as F


class TrainConfig:
    num_classes = 5000
    image_size = 32
    batch_size = 32
    steps = 4
    mixup_alpha = 0.4
    lr = 0.05


class BatchMixUp:
    def __init__(self, alpha):
        self.beta = torch.distributions.Beta(alpha, alpha)

    def __call__(self, images, labels):
        b = images.shape[0]
        lam = self.beta.sample((b,)).to(images.device, images.dtype)
        perm = torch.randperm(b, device=images.device)
        mixed = lam.view(-1, 1, 1, 1) * images + (1 - lam.view(-1, 1, 1, 1)) * images[perm]
        packed = torch.stack([labels.to(images.dtype), labels[perm].to(images.dtype), lam], dim=1)  # expect: any
        return mixed, packed


def mixup_cross_entropy(logits, packed):
    y_a, y_b, lam = packed[:, 0].long(), packed[:, 1].long(), packed[:, 2].float()
    loss_a = F.cross_entropy(logits.float(), y_a, reduction="none")
    loss_b = F.cross_entropy(logits.float(), y_b, reduction="none")
    return (lam * loss_a + (1 - lam) * loss_b).mean()


def make_model(num_classes):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(64, num_classes),
    )


def synthetic_batches(cfg):
    for _ in range(cfg.steps):
        images = torch.randint(0, 256, (cfg.batch_size, 3, cfg.image_size, cfg.image_size), dtype=torch.uint8)
        labels = torch.randint(0, cfg.num_classes, (cfg.batch_size,))
        yield images, labels


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    input_dtype = torch.float16 if use_amp else torch.float32
    model = make_model(cfg.num_classes).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    mixup = BatchMixUp(cfg.mixup_alpha)
    for step, (images, labels) in enumerate(synthetic_batches(cfg)):
        images = images.to(device).to(input_dtype).div_(255.0)
        labels = labels.to(device)
        images, packed = mixup(images, labels)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(images)
        loss = mixup_cross_entropy(logits, packed)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print("last loss", loss.item())


if __name__ == "__main__":
    train(TrainConfig())
