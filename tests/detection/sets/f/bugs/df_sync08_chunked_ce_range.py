# source: https://github.com/huggingface/trl/pull/6842
# area: transfer & sync
# bug: the chunk loop bound n_padded is a device tensor, so range() calls __index__ on it and blocks the host on every forward
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
IGNORE_INDEX = -100


def chunked_cross_entropy(hidden_states, lm_head_weight, labels, chunk_size=64):
    hidden = hidden_states.reshape(-1, hidden_states.shape[-1])
    flat_labels = labels.reshape(-1)
    valid = flat_labels != IGNORE_INDEX
    order = torch.argsort((~valid).to(torch.int8), stable=True)
    hidden = hidden.index_select(0, order)
    flat_labels = flat_labels.index_select(0, order)
    n_valid = valid.sum()
    n_padded = ((n_valid + chunk_size - 1) // chunk_size * chunk_size).clamp(min=chunk_size)
    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, n_padded, chunk_size):  # expect: any
        h = hidden[start:start + chunk_size]
        logits = F.linear(h, lm_head_weight).float()
        total = total + F.cross_entropy(logits, flat_labels[start:start + chunk_size],
                                        ignore_index=IGNORE_INDEX, reduction="sum")
    return total / n_valid.clamp(min=1)


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=1024, d_model=64, n_layers=2, n_heads=4, max_len=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(max_len, d_model))
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=input_ids.device)
        h = self.blocks(self.embed(input_ids) + self.pos[:t], mask=mask, is_causal=True)
        return self.norm(h)


def make_sft_batch(batch_size=4, seq_len=64, vocab=1024):
    ids = torch.randint(0, vocab, (batch_size, seq_len), device=device)
    prompt_len = torch.randint(16, seq_len // 2, (batch_size, 1), device=device)
    positions = torch.arange(seq_len, device=device).unsqueeze(0)
    labels = torch.where(positions >= prompt_len, ids, torch.full_like(ids, IGNORE_INDEX))
    return ids[:, :-1], labels[:, 1:]


class SFTTrainer:
    def __init__(self, model, lr=3e-4, chunk_size=64):
        self.model = model.to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.chunk_size = chunk_size

    def compute_loss(self, input_ids, labels):
        hidden = self.model(input_ids)
        return chunked_cross_entropy(hidden, self.model.lm_head.weight, labels, self.chunk_size)

    def train(self, steps=20, log_every=10):
        for step in range(1, steps + 1):
            input_ids, labels = make_sft_batch()
            loss = self.compute_loss(input_ids, labels)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            if step % log_every == 0:
                print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    SFTTrainer(TinyCausalLM()).train()
