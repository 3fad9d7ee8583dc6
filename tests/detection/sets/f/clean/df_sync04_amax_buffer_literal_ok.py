# twin of: bugs/df_sync04_amax_buffer_literal.py
# area: transfer & sync
# correct: the amax buffer is allocated directly on the device with torch.zeros, so no host-to-device copy happens per forward
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DelayedScaling:
    def __init__(self, history_len=16, margin=0.0, device=device):
        self.amax_history = torch.zeros(history_len, device=device)
        self.scale = torch.ones(1, device=device)
        self.margin = margin
        self.pos = 0

    def record(self, amax):
        self.amax_history[self.pos] = amax[0]
        self.pos = (self.pos + 1) % self.amax_history.numel()
        amax_max = self.amax_history.max().clamp_min(1e-6)
        self.scale.copy_(127.0 / amax_max / (2.0 ** self.margin))


def cast_to_int8(x, scale, amax_out):
    amax_out.copy_(x.detach().abs().amax().reshape(1))
    q = torch.clamp(torch.round(x * scale), -127, 127).to(torch.int8)
    return q


class Int8FakeQuantLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.recipe = DelayedScaling()

    def forward(self, x):
        amax = torch.zeros(1, device=x.device)
        q = cast_to_int8(x, self.recipe.scale, amax)
        x_dq = x + (q.float() / self.recipe.scale - x).detach()
        if self.training:
            self.recipe.record(amax)
        return self.linear(x_dq)


class QuantMLP(nn.Module):
    def __init__(self, dims=(64, 128, 128, 10)):
        super().__init__()
        self.layers = nn.ModuleList(Int8FakeQuantLinear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.gelu(x)
        return x


def train(steps=40, batch_size=64):
    torch.manual_seed(0)
    model = QuantMLP().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w_true = torch.randn(64, 10, device=device)
    running = torch.zeros((), device=device)
    for step in range(steps):
        x = torch.randn(batch_size, 64, device=device)
        y = (x @ w_true).argmax(-1)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
        if (step + 1) % 20 == 0:
            print(f"step {step + 1}: mean loss {(running / 20).item():.4f}")
            running.zero_()
    scales = [layer.recipe.scale.item() for layer in model.layers]
    print("final int8 scales:", [round(s, 3) for s in scales])


if __name__ == "__main__":
    train()
