# source: https://github.com/facebookresearch/fairseq/issues/3385
# area: porting & distributed
# bug: under torchrun the config's device_id keeps its default 0, so every local rank binds to and wraps DDP on GPU 0
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class DistributedTrainingConfig:
    distributed_world_size: int = 1
    distributed_rank: int = 0
    device_id: int = 0
    distributed_backend: str = field(
        default_factory=lambda: "nccl" if torch.cuda.is_available() else "gloo")
    master_port: int = 29612


def infer_torch_launch_init(cfg):
    if "WORLD_SIZE" not in os.environ:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(cfg.master_port),
                          RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
    cfg.distributed_rank = int(os.environ["RANK"])
    return cfg


def distributed_init(cfg):
    if torch.cuda.is_available():
        torch.cuda.set_device(cfg.device_id)  # expect[w]: any
    dist.init_process_group(cfg.distributed_backend,
                            world_size=cfg.distributed_world_size,
                            rank=cfg.distributed_rank)
    return cfg.distributed_rank


class TinyTranslationModel(nn.Module):
    def __init__(self, vocab=64, dim=32):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, dim)
        self.tgt_embed = nn.Embedding(vocab, dim)
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.proj = nn.Linear(dim, vocab)

    def forward(self, src, prev_tgt):
        memory = self.src_embed(src)
        query = self.tgt_embed(prev_tgt)
        out, _ = self.attn(query, memory, memory)
        return self.proj(out)


def build_ddp_model(cfg, model):
    if torch.cuda.is_available():
        device = torch.device("cuda", cfg.device_id)
        model = model.to(device)
        return nn.parallel.DistributedDataParallel(
            model, device_ids=[cfg.device_id], output_device=cfg.device_id), device  # expect[w]: any
    return nn.parallel.DistributedDataParallel(model), torch.device("cpu")


def main():
    cfg = infer_torch_launch_init(DistributedTrainingConfig())
    rank = distributed_init(cfg)
    torch.manual_seed(1234)
    model, device = build_ddp_model(cfg, TinyTranslationModel())
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98))

    src = torch.randint(1, 64, (16, 12)).to(device)
    tgt = torch.randint(1, 64, (16, 10)).to(device)
    prev_tgt = torch.roll(tgt, 1, dims=1)
    running = torch.zeros((), device=device)
    for _ in range(5):
        logits = model(src, prev_tgt)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1),
                               label_smoothing=0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
    if rank == 0:
        print("mean loss", (running / 5).item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
