# twin of: bugs/dl_dist07_main_only_eval_gather.py
# area: porting & distributed
# correct: every rank enters the evaluation (and its all_gather), only the main process prints the result
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=128, dim=32, layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        block = nn.TransformerEncoderLayer(dim, 4, dim * 2, batch_first=True, dropout=0.0)
        self.blocks = nn.TransformerEncoder(block, layers)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, ids):
        mask = nn.Transformer.generate_square_subsequent_mask(ids.size(1), device=ids.device)
        return self.lm_head(self.blocks(self.embed(ids), mask=mask, is_causal=True))


def gather_for_metrics(tensor):
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return tensor
    buckets = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(buckets, tensor)
    return torch.cat(buckets)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    losses = []
    for (ids,) in loader:
        ids = ids.to(device)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none").mean(1)
        losses.append(gather_for_metrics(loss))
    model.train()
    return math.exp(torch.cat(losses).mean().item())


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29617")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    is_main_process = dist.get_rank() == 0

    g = torch.Generator().manual_seed(0)
    train_set = TensorDataset(torch.randint(0, 128, (64, 17), generator=g))
    eval_set = TensorDataset(torch.randint(0, 128, (16, 17), generator=g))
    train_sampler = DistributedSampler(train_set)
    train_loader = DataLoader(train_set, batch_size=16, sampler=train_sampler)
    eval_loader = DataLoader(eval_set, batch_size=16, sampler=DistributedSampler(eval_set, shuffle=False))

    model = nn.parallel.DistributedDataParallel(
        TinyCausalLM().to(device), device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    eval_steps, global_step = 2, 0
    for epoch in range(2):
        train_sampler.set_epoch(epoch)
        for (ids,) in train_loader:
            ids = ids.to(device)
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            global_step += 1
            if global_step % eval_steps == 0:
                ppl = evaluate(model.module, eval_loader, device)
                if is_main_process:
                    print(f"step {global_step}: eval perplexity {ppl:.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
