# twin of: bugs/dh_amp08_seq2seq_attn_mask_neginf.py
# area: AMP
# correct: the mask fill value is chosen from the score dtype (-65504 for fp16 under autocast, -1e20 otherwise), so masked_fill_ never overflows
import torch
import torch.nn as nn
import torch.nn.functional as F

NEAR_INF = 1e20
NEAR_INF_FP16 = 65504
PAD, BOS = 0, 1


def neginf(dtype):
    return -NEAR_INF_FP16 if dtype is torch.float16 else -NEAR_INF


class Encoder(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden, padding_idx=PAD)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)

    def forward(self, xs):
        enc_out, hidden = self.rnn(self.embed(xs))
        return enc_out, hidden, xs.ne(PAD)


class AttentionLayer(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.query_proj = nn.Linear(hidden, hidden, bias=False)
        self.combine = nn.Linear(2 * hidden, hidden)

    def forward(self, dec_out, enc_out, attn_mask):
        attn_w_premask = torch.bmm(self.query_proj(dec_out), enc_out.transpose(1, 2))
        attn_w_premask.masked_fill_(~attn_mask.unsqueeze(1), neginf(attn_w_premask.dtype))
        attn_weights = F.softmax(attn_w_premask, dim=-1)
        context = torch.bmm(attn_weights, enc_out)
        return torch.tanh(self.combine(torch.cat([dec_out, context], dim=-1)))


class Seq2Seq(nn.Module):
    def __init__(self, vocab=50, hidden=64):
        super().__init__()
        self.encoder = Encoder(vocab, hidden)
        self.dec_embed = nn.Embedding(vocab, hidden, padding_idx=PAD)
        self.decoder = nn.GRU(hidden, hidden, batch_first=True)
        self.attention = AttentionLayer(hidden)
        self.output = nn.Linear(hidden, vocab)

    def forward(self, xs, ys):
        enc_out, hidden, mask = self.encoder(xs)
        dec_in = torch.cat([torch.full_like(ys[:, :1], BOS), ys[:, :-1]], dim=1)
        dec_out, _ = self.decoder(self.dec_embed(dec_in), hidden)
        return self.output(self.attention(dec_out, enc_out, mask))


def padded_batch(batch_size, max_len, vocab, device):
    lengths = torch.randint(3, max_len + 1, (batch_size,))
    xs = torch.randint(2, vocab, (batch_size, max_len))
    xs = xs.masked_fill(torch.arange(max_len)[None, :] >= lengths[:, None], PAD)
    ys = xs.flip(1).roll(1, dims=1)
    return xs.to(device), ys.to(device)


class TorchGeneratorAgent:
    def __init__(self, device, fp16):
        self.device = device
        self.fp16 = fp16
        self.model = Seq2Seq().to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.scaler = torch.amp.GradScaler("cuda", enabled=fp16)
        self.criterion = nn.CrossEntropyLoss(ignore_index=PAD)

    def train_step(self, xs, ys):
        self.model.train()
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.fp16):
            scores = self.model(xs, ys)
            loss = self.criterion(scores.reshape(-1, scores.size(-1)), ys.reshape(-1))
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(11)
    agent = TorchGeneratorAgent(device, fp16=device.type == "cuda")
    losses = torch.stack([agent.train_step(*padded_batch(8, 12, 50, device)) for _ in range(10)])
    print(f"loss: start {losses[0].item():.3f} end {losses[-1].item():.3f}")
