# source: https://github.com/mistralai/mistral-inference/issues/252
# area: porting & distributed
# bug: the prompt length and token ids are broadcast as CPU tensors, which the NCCL backend rejects ("No backend type associated with device type cpu")
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn

VOCAB = 256


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed():
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    if torch.cuda.is_available():
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo")
    return torch.device("cpu")


class ByteTokenizer:
    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(i % 256 for i in ids).decode("utf-8", errors="replace")


class TinyLM(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, VOCAB)

    def forward(self, ids, state=None):
        h, state = self.rnn(self.embed(ids), state)
        return self.out(h), state


def share_prompt(tokenizer, prompt, device):
    if dist.get_rank() == 0:
        ids = tokenizer.encode(prompt)
        length_tensor = torch.tensor([len(ids)], dtype=torch.long)  # expect[b]: any
    else:
        length_tensor = torch.zeros(1, dtype=torch.long)
    dist.broadcast(length_tensor, src=0)  # expect[b]: any
    n = int(length_tensor.item())
    if dist.get_rank() == 0:
        tokens = torch.tensor(ids, dtype=torch.long)
    else:
        tokens = torch.empty(n, dtype=torch.long)
    dist.broadcast(tokens, src=0)  # expect[b]: any
    return tokens.to(device)


@torch.no_grad()
def generate(model, prompt_ids, max_new_tokens=16):
    logits, state = model(prompt_ids.unsqueeze(0))
    out = []
    next_id = logits[:, -1].argmax(-1, keepdim=True)
    for _ in range(max_new_tokens):
        out.append(next_id)
        logits, state = model(next_id, state)
        next_id = logits[:, -1].argmax(-1, keepdim=True)
    return torch.cat(out, dim=1).squeeze(0)


def main():
    device = init_distributed()
    torch.manual_seed(0)
    model = TinyLM().to(device).eval()
    tokenizer = ByteTokenizer()
    prompt_ids = share_prompt(tokenizer, "The quick brown fox", device)
    generated = generate(model, prompt_ids)
    if dist.get_rank() == 0:
        print("generated ids:", generated.cpu().tolist()[:8])
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
