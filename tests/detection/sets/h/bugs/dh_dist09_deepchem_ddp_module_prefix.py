# source: https://github.com/deepchem/deepchem/pull/4201
# area: porting & distributed
# bug: the checkpoint stores the DDP wrapper's state_dict, whose keys carry a "module." prefix, so restoring it into the plain model for prediction fails after multi-GPU training
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class MolRegressor(nn.Module):
    def __init__(self, n_features=64, hidden=128, n_tasks=3, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Dropout(dropout),
                                 nn.Linear(hidden, hidden // 2), nn.ReLU())
        self.out = nn.Linear(hidden // 2, n_tasks)

    def forward(self, x):
        return self.out(self.net(x))


class TorchModelWrapper:
    def __init__(self, model_builder, model_dir, device, distributed, local_rank):
        self.model_builder = model_builder
        self.model_dir = model_dir
        self.device = device
        self.distributed = distributed
        model = model_builder().to(device)
        if distributed:
            ids = [local_rank] if device.type == "cuda" else None
            model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.global_step = 0

    def fit_batches(self, batches):
        self.model.train()
        for x, y, w in batches:
            x, y, w = x.to(self.device), y.to(self.device), w.to(self.device)
            loss = (F.mse_loss(self.model(x), y, reduction="none") * w).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.global_step += 1

    def save_checkpoint(self):
        if self.distributed and dist.get_rank() != 0:
            return
        data = {"model_state_dict": self.model.state_dict(),  # expect: any
                "optimizer_state_dict": self.optimizer.state_dict(),
                "global_step": self.global_step}
        torch.save(data, os.path.join(self.model_dir, "checkpoint1.pt"))

    def restore_for_inference(self):
        data = torch.load(os.path.join(self.model_dir, "checkpoint1.pt"), map_location=self.device)
        model = self.model_builder().to(self.device)
        model.load_state_dict(data["model_state_dict"])
        return model.eval()


def featurized_batches(n, g, bs=32):
    for _ in range(n):
        x = torch.randn(bs, 64, generator=g)
        y = torch.stack([x[:, :8].sum(1), x[:, 8:16].mean(1), x[:, 16]], dim=1)
        yield x, y, torch.ones(bs, 3)


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    if distributed:
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    with tempfile.TemporaryDirectory() as model_dir:
        torch.manual_seed(0)
        wrapper = TorchModelWrapper(MolRegressor, model_dir, device, distributed, local_rank)
        g = torch.Generator().manual_seed(dist.get_rank() if distributed else 0)
        wrapper.fit_batches(featurized_batches(10, g))
        wrapper.save_checkpoint()
        if not distributed or dist.get_rank() == 0:
            model = wrapper.restore_for_inference()
            with torch.no_grad():
                preds = model(torch.randn(4, 64, generator=g).to(device))
            print("restored step", wrapper.global_step, "pred shape", tuple(preds.shape))
        if distributed:
            dist.barrier()
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
