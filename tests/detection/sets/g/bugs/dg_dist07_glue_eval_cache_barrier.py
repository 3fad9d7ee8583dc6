# source: https://github.com/huggingface/transformers/pull/1081
# area: porting & distributed
# bug: the feature-cache helper brackets its work with barriers, but evaluation runs it on rank 0 only, so rank 0 waits forever at the closing barrier under torchrun
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class GlueArgs:
    def __init__(self, cache_dir):
        self.cache_dir = cache_dir
        self.local_rank = int(os.environ.get("LOCAL_RANK", -1)) if "RANK" in os.environ else -1
        self.max_seq_length, self.vocab_size, self.num_labels = 32, 500, 2
        self.train_batch_size, self.eval_batch_size, self.epochs = 16, 32, 2
        self.do_eval = True
        self.device = torch.device("cpu")


def load_and_cache_examples(args, task, evaluate=False):
    if args.local_rank not in [-1, 0]:
        dist.barrier()
    split = "dev" if evaluate else "train"
    cached = os.path.join(args.cache_dir, f"cached_{split}_{task}_{args.max_seq_length}.pt")
    if os.path.exists(cached):
        input_ids, labels = torch.load(cached)
    else:
        g = torch.Generator().manual_seed(1 if evaluate else 0)
        n = 128 if evaluate else 512
        input_ids = torch.randint(1, args.vocab_size, (n, args.max_seq_length), generator=g)
        labels = (input_ids[:, 0] % 2).long()
        if args.local_rank in [-1, 0]:
            torch.save((input_ids, labels), cached)
    if args.local_rank == 0:
        dist.barrier()  # expect[hang]: any
    return TensorDataset(input_ids, labels)


class BagOfWordsClassifier(nn.Module):
    def __init__(self, vocab_size, num_labels, dim=64):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab_size, dim)
        self.head = nn.Linear(dim, num_labels)

    def forward(self, input_ids):
        return self.head(self.embed(input_ids))


def train(args, model, dataset):
    sampler = DistributedSampler(dataset) if args.local_rank != -1 else None
    loader = DataLoader(dataset, batch_size=args.train_batch_size, sampler=sampler, shuffle=sampler is None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for input_ids, labels in loader:
            logits = model(input_ids.to(args.device))
            loss = nn.functional.cross_entropy(logits, labels.to(args.device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()


def evaluate(args, model, task):
    dataset = load_and_cache_examples(args, task, evaluate=True)
    loader = DataLoader(dataset, batch_size=args.eval_batch_size)
    correct = torch.zeros((), dtype=torch.long, device=args.device)
    model.eval()
    with torch.no_grad():
        for input_ids, labels in loader:
            preds = model(input_ids.to(args.device)).argmax(-1)
            correct += (preds == labels.to(args.device)).sum()
    return correct.item() / len(dataset)


def main():
    with tempfile.TemporaryDirectory() as cache_dir:
        args = GlueArgs(cache_dir)
        if args.local_rank != -1:
            if torch.cuda.is_available():
                torch.cuda.set_device(args.local_rank)
                args.device = torch.device("cuda", args.local_rank)
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        elif torch.cuda.is_available():
            args.device = torch.device("cuda")
        model = BagOfWordsClassifier(args.vocab_size, args.num_labels).to(args.device)
        if args.local_rank != -1:
            model = DDP(model, device_ids=[args.local_rank] if args.device.type == "cuda" else None)
        train(args, model, load_and_cache_examples(args, "sst-2", evaluate=False))
        if args.do_eval and args.local_rank in [-1, 0]:  # expect[hang]: any
            eval_model = model.module if hasattr(model, "module") else model
            print("eval accuracy:", evaluate(args, eval_model, "sst-2"))
        if args.local_rank != -1:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
