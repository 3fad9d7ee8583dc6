# twin of: bugs/dg_dev01_moe_gate_param_to.py
# area: device placement
# correct: the gate weights stay registered nn.Parameters and are moved with the module by model.to(device)
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_out))

    def forward(self, x):
        return self.net(x)


class NoisyTopKMoE(nn.Module):
    """Sparsely gated mixture of experts with noisy top-k routing."""

    def __init__(self, d_in, d_out, num_experts=4, hidden=32, k=2):
        super().__init__()
        self.k = k
        self.num_experts = num_experts
        self.experts = nn.ModuleList([Expert(d_in, hidden, d_out) for _ in range(num_experts)])
        self.w_gate = nn.Parameter(torch.zeros(d_in, num_experts), requires_grad=True)
        self.w_noise = nn.Parameter(torch.zeros(d_in, num_experts), requires_grad=True)

    def route(self, x):
        clean_logits = x @ self.w_gate
        if self.training:
            noise_std = F.softplus(x @ self.w_noise) + 1e-2
            logits = clean_logits + torch.randn_like(clean_logits) * noise_std
        else:
            logits = clean_logits
        top_vals, top_idx = logits.topk(self.k, dim=-1)
        weights = F.softmax(top_vals, dim=-1)
        return torch.zeros_like(logits).scatter(-1, top_idx, weights)

    def forward(self, x):
        gates = self.route(x)
        expert_out = torch.stack([expert(x) for expert in self.experts], dim=1)
        y = (gates.unsqueeze(-1) * expert_out).sum(dim=1)
        importance = gates.sum(dim=0)
        balance_loss = importance.var() / (importance.mean() ** 2 + 1e-10)
        return y, balance_loss


def make_batch(batch_size, d_in, device):
    x = torch.randn(batch_size, d_in, device=device)
    y = torch.sin(x[:, :1]) + 0.5 * x[:, 1:2] * x[:, 2:3]
    return x, y


def train(model, device, steps_per_epoch=20, epochs=3, d_in=16, lr=1e-2, balance_coef=1e-2):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        running = torch.zeros((), device=device)
        for _ in range(steps_per_epoch):
            x, y = make_batch(64, d_in, device)
            pred, aux = model(x)
            loss = F.mse_loss(pred, y) + balance_coef * aux
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
        print(f"epoch {epoch}: loss {(running / steps_per_epoch).item():.4f}")


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    d_in = 16
    model = NoisyTopKMoE(d_in, 1, num_experts=4).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"trainable parameters: {n_params}")
    train(model, device, d_in=d_in)
    model.eval()
    with torch.no_grad():
        x, y = make_batch(256, d_in, device)
        pred, _ = model(x)
        print(f"eval mse: {F.mse_loss(pred, y).item():.4f}")


if __name__ == "__main__":
    main()
