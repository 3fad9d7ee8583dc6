# source: https://github.com/facebookresearch/maskrcnn-benchmark/pull/535
# area: porting & distributed
# bug: under multi-GPU DDP every rank writes the same checkpoint file and last_checkpoint pointer, racing on the shared disk
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Checkpointer:
    def __init__(self, model, optimizer, scheduler, save_dir):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.save_dir = save_dir

    def save(self, name, **extra):
        net = self.model.module if hasattr(self.model, "module") else self.model
        data = {"model": net.state_dict(), "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), **extra}
        path = os.path.join(self.save_dir, f"{name}.pth")
        torch.save(data, path)  # expect[s]: any
        with open(os.path.join(self.save_dir, "last_checkpoint"), "w") as f:
            f.write(path)


class BoxHead(nn.Module):
    def __init__(self, in_ch=3, num_classes=6):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(in_ch, 16, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.cls = nn.Linear(32, num_classes)
        self.box = nn.Linear(32, 4)

    def forward(self, images, labels, boxes):
        feats = self.backbone(images)
        return {"loss_cls": F.cross_entropy(self.cls(feats), labels),
                "loss_box": F.smooth_l1_loss(self.box(feats), boxes)}


def init_distributed():
    if "RANK" in os.environ:
        local_rank = int(os.environ["LOCAL_RANK"])
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        return torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def do_train(model, optimizer, scheduler, checkpointer, device, max_iter=20, period=10):
    g = torch.Generator().manual_seed(1234 + (dist.get_rank() if dist.is_initialized() else 0))
    model.train()
    for iteration in range(1, max_iter + 1):
        images = torch.randn(8, 3, 32, 32, generator=g).to(device)
        labels = torch.randint(0, 6, (8,), generator=g).to(device)
        boxes = torch.rand(8, 4, generator=g).to(device)
        loss_dict = model(images, labels, boxes)
        losses = sum(loss_dict.values())
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        scheduler.step()
        if iteration % period == 0:
            checkpointer.save(f"model_{iteration:07d}", iteration=iteration)
    checkpointer.save("model_final", iteration=max_iter)


def main():
    device = init_distributed()
    torch.manual_seed(0)
    model = BoxHead().to(device)
    if dist.is_initialized():
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[15], gamma=0.1)

    output_dir = os.path.join(tempfile.gettempdir(), "boxhead_output")
    os.makedirs(output_dir, exist_ok=True)
    checkpointer = Checkpointer(model, optimizer, scheduler, output_dir)  # expect[s]: any
    do_train(model, optimizer, scheduler, checkpointer, device)

    if dist.is_initialized():
        dist.barrier()
    if not dist.is_initialized() or dist.get_rank() == 0:
        print("checkpoints:", sorted(f for f in os.listdir(output_dir) if f.endswith(".pth")))
        shutil.rmtree(output_dir, ignore_errors=True)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
