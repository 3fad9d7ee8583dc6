# source: https://github.com/facebookresearch/detectron2/pull/3686
# area: AMP
# bug: the checkpoint stores model/optimizer/scheduler but not the GradScaler state, so a resumed GPU run restarts at the default 65536 scale and growth tracker and skips/destabilizes updates
import os
import tempfile
import torch
import torch.nn as nn


class TabularNet(nn.Module):
    def __init__(self, n_features=24, n_classes=5):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 64), nn.ReLU())
        self.cls = nn.Linear(64, n_classes)

    def forward(self, x):
        return self.cls(self.body(x))


class AmpTrainer:
    def __init__(self, work_dir, device, lr=3e-3, total_steps=40):
        self.work_dir = work_dir
        self.device = device
        self.amp = device.type == "cuda"
        self.model = TabularNet().to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.scheduler = torch.optim.lr_scheduler.OneCycleLR(self.optimizer, max_lr=lr, total_steps=total_steps)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp, init_scale=2.0 ** 16)
        self.global_step = 0

    @property
    def ckpt_path(self):
        return os.path.join(self.work_dir, "last.pt")

    def save_checkpoint(self):
        state = {  # expect[ck]: any
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "step": self.global_step,
        }
        torch.save(state, self.ckpt_path)  # expect[ck]: any

    def maybe_resume(self):
        if not os.path.exists(self.ckpt_path):
            return
        state = torch.load(self.ckpt_path, map_location=self.device)  # expect[ck]: any
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.global_step = state["step"]

    def run(self, n_steps, batch=64):
        self.model.train()
        loss_fn = nn.CrossEntropyLoss()
        for _ in range(n_steps):
            x = torch.randn(batch, 24, device=self.device)
            y = (x[:, :5].argmax(dim=1)).long()
            with torch.autocast(self.device.type, dtype=torch.float16, enabled=self.amp):
                loss = loss_fn(self.model(x), y)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.scheduler.step()
            self.global_step += 1
        return loss.detach()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as work_dir:
        first = AmpTrainer(work_dir, device)
        first.run(20)
        first.save_checkpoint()
        resumed = AmpTrainer(work_dir, device)
        resumed.maybe_resume()
        final_loss = resumed.run(20)
        print("resumed at step", 20, "final loss", final_loss.item(), "global step", resumed.global_step)


if __name__ == "__main__":
    main()
