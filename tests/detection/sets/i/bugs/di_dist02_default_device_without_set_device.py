# source: https://github.com/pytorch-tpu/llama/pull/21
# area: porting & distributed
# bug: setup never calls torch.cuda.set_device(local_rank), so the bare "cuda" default device resolves to cuda:0 in every torchrun process and all ranks build their model shard on GPU 0
import os
import socket
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_layers: int = 2
    vocab_size: int = 256
    max_seq_len: int = 32
    max_batch_size: int = 4


def setup_model_parallel():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")  # expect[w]: any
    torch.manual_seed(1)
    return local_rank, world_size


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Transformer(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.tok = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList(Block(args.dim) for _ in range(args.n_layers))
        self.out = nn.Linear(args.dim, args.vocab_size, bias=False)

    def forward(self, tokens):
        h = self.tok(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.out(h[:, -1])


def load(args, local_rank, world_size):
    start = time.time()
    torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")  # expect[w]: any
    model = Transformer(args)
    torch.set_default_device(None)
    print(f"[rank {local_rank}/{world_size}] loaded in {time.time() - start:.2f}s")
    return model.eval()


@torch.inference_mode()
def generate(model, prompts, args, max_gen_len=8, temperature=0.8):
    device = next(model.parameters()).device
    tokens = prompts.to(device)
    for _ in range(max_gen_len):
        window = tokens[:, -args.max_seq_len:]
        probs = F.softmax(model(window) / temperature, dim=-1)
        tokens = torch.cat([tokens, torch.multinomial(probs, 1)], dim=1)
    return tokens[:, prompts.shape[1]:]


def main():
    local_rank, world_size = setup_model_parallel()
    args = ModelArgs()
    model = load(args, local_rank, world_size)
    prompts = torch.randint(0, args.vocab_size, (args.max_batch_size, 12))
    out = generate(model, prompts, args)
    if dist.get_rank() == 0:
        print("generated", out.tolist())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
