# source: https://github.com/pytorch/pytorch/issues/100243
# area: porting & distributed
# bug: the classifier is wrapped in DistributedDataParallel with device_ids=[local_rank] while its parameters are still on the CPU; DDP rejects the CPU module on a GPU run
import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Subset, TensorDataset

VOCAB, SEQ_LEN, NUM_CLASSES = 500, 24, 3


def parse_args():
    p = argparse.ArgumentParser(description="distributed batch inference")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-samples", type=int, default=300)
    return p.parse_args([])


def ddp_setup():
    if "LOCAL_RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                              MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    return local_rank


class BagOfWordsClassifier(nn.Module):
    def __init__(self, vocab, dim=64, num_classes=NUM_CLASSES):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, num_classes))

    def forward(self, tokens):
        mask = (tokens != 0).unsqueeze(-1).float()
        pooled = (self.embed(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.mlp(pooled)


def build_dataset(n):
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(1, VOCAB, (n, SEQ_LEN), generator=g)
    tokens[:, SEQ_LEN // 2:] *= (torch.rand(n, 1, generator=g) > 0.5).long()
    labels = tokens[:, 0] % NUM_CLASSES
    return TensorDataset(tokens, labels)


def main(opt):
    local_rank = ddp_setup()
    rank, world_size = dist.get_rank(), dist.get_world_size()
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")

    model = BagOfWordsClassifier(VOCAB)
    model = DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None,  # expect[m]: any
                                    output_device=local_rank if use_cuda else None)
    model = model.to(device)  # expect[m]: any
    model.eval()

    dataset = build_dataset(opt.num_samples)
    shard = Subset(dataset, list(range(rank, len(dataset), world_size)))
    loader = DataLoader(shard, batch_size=opt.batch_size, pin_memory=use_cuda)

    correct = torch.zeros((), dtype=torch.long, device=device)
    seen = torch.zeros((), dtype=torch.long, device=device)
    with torch.no_grad():
        for tokens, labels in loader:
            tokens = tokens.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            preds = model(tokens).argmax(dim=1)
            correct += (preds == labels).sum()
            seen += labels.numel()
    dist.all_reduce(correct)
    dist.all_reduce(seen)
    if rank == 0:
        print(f"accuracy over {seen.item()} samples: {correct.item() / seen.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(parse_args())
