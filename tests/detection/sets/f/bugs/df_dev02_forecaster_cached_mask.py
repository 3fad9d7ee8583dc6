# source: https://github.com/unit8co/darts/issues/3052
# area: device placement
# bug: the causal mask and relative index are cached as plain attributes and only rebuilt when the batch size changes, so after the CPU dry run and model.to(device) the stale CPU tensors are reused in forward on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttentionForecaster(nn.Module):
    def __init__(self, n_features, d_model=32, n_heads=4, input_len=24, output_len=6):
        super().__init__()
        self.input_len = input_len
        self.output_len = output_len
        self.proj = nn.Linear(n_features + 1, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, 1)
        self.attention_mask = None
        self.relative_index = None
        self.batch_size_last = -1

    def _build_cache(self, batch_size, device):
        total = self.input_len + self.output_len
        mask = torch.triu(torch.ones(total, total, dtype=torch.bool, device=device), diagonal=1)
        rel = torch.arange(total, device=device, dtype=torch.float32) / total
        rel = rel.view(1, total, 1).expand(batch_size, total, 1)
        return mask, rel

    def forward(self, past, future_known):
        batch_size = past.shape[0]
        if batch_size != self.batch_size_last:  # expect[w]: any
            mask, rel = self._build_cache(batch_size, past.device)
            self.attention_mask = mask  # expect[w]: any
            self.relative_index = rel  # expect[w]: any
            self.batch_size_last = batch_size
        seq = torch.cat([past, future_known], dim=1)
        seq = torch.cat([seq, self.relative_index], dim=-1)
        h = self.proj(seq)
        a, _ = self.attn(h, h, h, attn_mask=self.attention_mask, need_weights=False)
        h = self.norm(h + a)
        return self.out(h[:, -self.output_len:]).squeeze(-1)


def make_windows(n_series, input_len, output_len, n_features):
    t = torch.linspace(0, 12.0, input_len + output_len)
    phase = torch.rand(n_series, 1) * 6.28
    signal = torch.sin(t + phase)
    feats = torch.randn(n_series, input_len + output_len, n_features - 1) * 0.1
    data = torch.cat([signal.unsqueeze(-1), feats], dim=-1)
    past = data[:, :input_len]
    future_known = torch.zeros(n_series, output_len, n_features)
    future_known[..., 1:] = data[:, input_len:, 1:]
    target = signal[:, input_len:]
    return past, future_known, target


def sanity_check(model, batch_size, n_features):
    with torch.no_grad():
        past = torch.zeros(batch_size, model.input_len, n_features)
        fut = torch.zeros(batch_size, model.output_len, n_features)
        out = model(past, fut)
    assert out.shape == (batch_size, model.output_len)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n_features, batch_size = 3, 16
    model = AttentionForecaster(n_features)
    sanity_check(model, batch_size, n_features)
    model.to(device)

    past, fut, target = make_windows(192, model.input_len, model.output_len, n_features)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(past, fut, target),
        batch_size=batch_size, shuffle=True, drop_last=True, pin_memory=torch.cuda.is_available(),
    )
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(3):
        total = torch.zeros((), device=device)
        for p, f, y in loader:
            p, f, y = p.to(device), f.to(device), y.to(device)
            loss = F.mse_loss(model(p, f), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch} mse {(total / len(loader)).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
