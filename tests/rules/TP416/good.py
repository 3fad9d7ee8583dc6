import os

import torch
import torch.distributed as dist


def load_features(args):
    if args.local_rank not in [-1, 0]:
        dist.barrier()  # the others wait until the main process has cached the features
    features = torch.randn(8, 4)
    if args.local_rank == 0:
        dist.barrier()  # the main process releases them
    return features


def evaluate(args, model, features):
    return model(features).mean()


def main(args, model):
    dist.init_process_group("nccl")
    features = load_features(args)
    if args.local_rank in [-1, 0]:
        print(evaluate(args, model, features))


def sync_metrics(total):
    dist.all_reduce(total)
    return total


def report(total):
    total = sync_metrics(total)
    if int(os.environ.get("RANK", 0)) == 0:
        print(total)


def log_loss(loss):
    dist.all_reduce(loss)
    if dist.get_rank() == 0:
        print(loss.item())


def gather_losses(loss):
    buckets = [torch.empty_like(loss) for _ in range(dist.get_world_size())]
    dist.all_gather(buckets, loss)
    return torch.cat(buckets)


def train(model, batches, eval_every):
    is_main_process = dist.get_rank() == 0
    for step, batch in enumerate(batches):
        loss = model(batch)
        if step % eval_every == 0:
            gathered = gather_losses(loss.detach())  # every process joins
            if is_main_process:
                print(gathered.mean().item())
