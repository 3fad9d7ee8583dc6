# source: https://github.com/pytorch/vision/pull/4923
# area: AMP
# bug: with --amp on the GPU the checkpoint omits the GradScaler state, so a resumed run restarts from the default 65536 scale and skips/perturbs steps instead of continuing the run
import os
import tempfile
from argparse import Namespace

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def get_args(output_dir, resume="", start_epoch=0, epochs=2):
    return Namespace(lr=0.05, momentum=0.9, weight_decay=1e-4, epochs=epochs, batch_size=32,
                     amp=True, output_dir=output_dir, resume=resume, start_epoch=start_epoch)


def build_model(num_classes=10):
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, num_classes))


def train_one_epoch(model, criterion, optimizer, loader, device, scaler, use_amp):
    model.train()
    total = torch.zeros((), device=device)
    for image, target in loader:
        image = image.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            loss = criterion(model(image), target)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        total += loss.detach()
    return total / len(loader)


def main(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = args.amp and device.type == "cuda"
    torch.manual_seed(0)
    data = TensorDataset(torch.rand(128, 3, 16, 16), torch.randint(0, 10, (128,)))
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, pin_memory=device.type == "cuda")
    model = build_model().to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        lr_scheduler.load_state_dict(checkpoint["lr_scheduler"])  # expect[ckpt]: any
        args.start_epoch = checkpoint["epoch"] + 1

    for epoch in range(args.start_epoch, args.epochs):
        avg_loss = train_one_epoch(model, criterion, optimizer, loader, device, scaler, use_amp)
        lr_scheduler.step()
        checkpoint = {  # expect[ckpt]: any
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "lr_scheduler": lr_scheduler.state_dict(),
            "epoch": epoch,
            "args": vars(args),
        }
        torch.save(checkpoint, os.path.join(args.output_dir, "checkpoint.pth"))
        print(f"epoch {epoch} loss {avg_loss.item():.4f} scale {scaler.get_scale() if use_amp else 1.0}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(get_args(tmp, epochs=2))
        main(get_args(tmp, resume=os.path.join(tmp, "checkpoint.pth"), epochs=3))
