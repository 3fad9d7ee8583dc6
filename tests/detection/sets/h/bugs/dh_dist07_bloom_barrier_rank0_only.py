# source: https://github.com/huggingface/transformers-bloom-inference/pull/40
# area: porting & distributed
# bug: dist.barrier() sits inside the rank-0-only branch, so only rank 0 enters the collective; the other GPUs race ahead to load a checkpoint that is not written yet and rank 0 deadlocks
import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=128, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids, state=None):
        h, state = self.rnn(self.embed(ids), state)
        return self.lm_head(h), state


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--cache_dir", default=os.path.join(tempfile.gettempdir(), "tiny_lm_cache"))
    p.add_argument("--max_new_tokens", type=int, default=12)
    p.add_argument("--batch_size", type=int, default=2)
    return p.parse_args([])


def setup():
    if "RANK" in os.environ and dist.is_available():
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        rank = dist.get_rank()
    else:
        local_rank, rank = 0, 0
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    return rank, device


def prepare_checkpoint(cache_dir, rank):
    path = os.path.join(cache_dir, "tiny_lm.pt")
    if rank == 0:
        os.makedirs(cache_dir, exist_ok=True)
        if not os.path.exists(path):
            torch.manual_seed(1234)
            torch.save(TinyCausalLM().state_dict(), path)
        if dist.is_initialized():
            dist.barrier()  # expect: any
    return path


@torch.inference_mode()
def generate(model, prompt, max_new_tokens):
    logits, state = model(prompt)
    out = [prompt]
    nxt = logits[:, -1].argmax(dim=-1, keepdim=True)
    for _ in range(max_new_tokens):
        out.append(nxt)
        logits, state = model(nxt, state)
        nxt = logits[:, -1].argmax(dim=-1, keepdim=True)
    return torch.cat(out, dim=1)


def main():
    args = get_args()
    rank, device = setup()
    path = prepare_checkpoint(args.cache_dir, rank)
    model = TinyCausalLM()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    model = model.to(device).eval()
    g = torch.Generator().manual_seed(rank)
    prompt = torch.randint(0, 128, (args.batch_size, 5), generator=g).to(device)
    tokens = generate(model, prompt, args.max_new_tokens).cpu()
    if rank == 0:
        print("generated", tokens.shape[1] - prompt.shape[1], "tokens:", tokens[0].tolist())
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
