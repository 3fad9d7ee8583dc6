# source: https://github.com/openai/gpt-oss/issues/266
# area: porting & distributed
# bug: init_distributed binds the CUDA device with the global RANK, so on the second node of a multi-node torchrun (RANK >= GPUs per node) it asks for a GPU that does not exist
import os

import torch
import torch.nn as nn
import torch.distributed as dist


def init_distributed() -> torch.device:
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    if world_size > 1 and dist.is_available() and torch.cuda.is_available():
        torch.cuda.set_device(rank)  # expect[w]: any
        dist.init_process_group(backend="nccl", rank=rank, world_size=world_size)
        device = torch.device(f"cuda:{rank}")  # expect[w]: any
        warm = torch.ones(1, device=device)
        dist.all_reduce(warm)
        return device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyDecoder(nn.Module):
    def __init__(self, vocab=256, dim=64, heads=4, layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        t = ids.size(1)
        pos = torch.arange(t, device=ids.device)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=ids.device)
        h = self.blocks(self.tok(ids) + self.pos(pos), mask=mask, is_causal=True)
        return self.lm_head(h)


@torch.inference_mode()
def generate(model, prompt_ids, max_new_tokens=16):
    ids = prompt_ids
    for _ in range(max_new_tokens):
        logits = model(ids)[:, -1, :]
        nxt = logits.argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
    return ids


def encode(text, device):
    return torch.tensor([list(text.encode("utf-8"))], dtype=torch.long, device=device)


def main():
    device = init_distributed()
    rank = dist.get_rank() if dist.is_initialized() else 0
    world = dist.get_world_size() if dist.is_initialized() else 1

    torch.manual_seed(0)
    model = TinyDecoder().to(device).eval()
    prompts = ["hello there", "the quick fox", "gpu ranks", "to be or not"]
    for i in range(rank, len(prompts), world):
        out = generate(model, encode(prompts[i], device))
        print(f"[rank {rank}] {prompts[i]!r} -> {len(out[0].tolist())} tokens")
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
