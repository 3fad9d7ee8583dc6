# source: https://github.com/kakaobrain/scrl/issues/5
# area: porting & distributed
# bug: every DDP rank writes checkpoint_best.pth to the same path at the same time, so the file on disk ends up corrupted
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def shared_save_dir():
    holder = [tempfile.mkdtemp(prefix="linear_eval_") if is_main_process() else None]
    if dist.is_initialized():
        dist.broadcast_object_list(holder, src=0)
    return holder[0]


class TrainerConfig:
    def __init__(self, save_dir, max_epochs=3, steps_per_epoch=6, batch_size=32, lr=0.05):
        self.save_dir = save_dir
        self.max_epochs = max_epochs
        self.steps_per_epoch = steps_per_epoch
        self.batch_size = batch_size
        self.lr = lr


class LinearEvalTrainer:
    def __init__(self, cfg, device, local_rank):
        self.cfg = cfg
        self.device = device
        net = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
        if dist.is_initialized():
            net = DDP(net, device_ids=[local_rank] if device.type == "cuda" else None)
        self.model = net
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=0.9)
        self.cur_epoch = 0
        self.max_eval_acc = torch.zeros((), device=device)
        self.generator = torch.Generator(device="cpu").manual_seed(dist.get_rank() if dist.is_initialized() else 0)

    def _batch(self):
        x = torch.randn(self.cfg.batch_size, 128, generator=self.generator)
        y = (x[:, :10].argmax(dim=1))
        return x.to(self.device), y.to(self.device)

    def _train_one_epoch(self):
        self.model.train()
        for _ in range(self.cfg.steps_per_epoch):
            x, y = self._batch()
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()

    @torch.no_grad()
    def _evaluate(self):
        self.model.eval()
        correct = torch.zeros((), device=self.device)
        total = 0
        for _ in range(4):
            x, y = self._batch()
            correct += (self.model(x).argmax(dim=1) == y).sum()
            total += y.numel()
        if dist.is_initialized():
            dist.all_reduce(correct)
            total *= dist.get_world_size()
        return correct / total

    def _save_checkpoint(self, tag):
        save_path = os.path.join(self.cfg.save_dir, f"checkpoint_{tag}.pth")
        module = self.model.module if isinstance(self.model, DDP) else self.model
        state = {"tag": str(tag), "epoch": self.cur_epoch, "max_eval_acc": self.max_eval_acc.cpu(),
                 "model": module.state_dict(), "optimizer": self.optimizer.state_dict()}
        torch.save(state, save_path)  # expect: any
        return save_path

    def run(self):
        for epoch in range(self.cfg.max_epochs):
            self.cur_epoch = epoch
            self._train_one_epoch()
            acc = self._evaluate()
            improved = bool(acc > self.max_eval_acc)
            if improved:
                self.max_eval_acc = acc
                self._save_checkpoint("best")
        if is_main_process():
            self._save_checkpoint("last")
        return float(self.max_eval_acc)


def main():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if "RANK" in os.environ and dist.is_available():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    save_dir = shared_save_dir()
    trainer = LinearEvalTrainer(TrainerConfig(save_dir), device, local_rank)
    best = trainer.run()
    if dist.is_initialized():
        dist.barrier()
    if is_main_process():
        print("best eval acc:", round(best, 4), "files:", sorted(os.listdir(save_dir)))
        shutil.rmtree(save_dir)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
