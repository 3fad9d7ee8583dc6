# twin of: bugs/de_amp03_custom_fn_no_custom_fwd.py
# area: AMP
# correct: forward/backward are wrapped with torch.amp.custom_fwd/custom_bwd, so backward runs under the same autocast state and the bmm dtypes match
import torch
import torch.nn as nn


class ExpertMatmul(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x, weight, expert_idx):
        w = weight[expert_idx]
        ctx.save_for_backward(x, weight, expert_idx)
        return torch.bmm(x.unsqueeze(1), w).squeeze(1)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad_out):
        x, weight, expert_idx = ctx.saved_tensors
        w = weight[expert_idx]
        grad_x = torch.bmm(grad_out.unsqueeze(1), w.transpose(1, 2)).squeeze(1)
        grad_w_tok = x.unsqueeze(2) * grad_out.unsqueeze(1)
        grad_weight = torch.zeros_like(weight).index_add_(0, expert_idx, grad_w_tok.to(weight.dtype))
        return grad_x, grad_weight, None


class Top1MoE(nn.Module):
    def __init__(self, d_model, d_hidden, n_experts):
        super().__init__()
        self.router = nn.Linear(d_model, n_experts)
        self.w_in = nn.Parameter(torch.randn(n_experts, d_model, d_hidden) * d_model ** -0.5)
        self.w_out = nn.Parameter(torch.randn(n_experts, d_hidden, d_model) * d_hidden ** -0.5)

    def forward(self, x):
        gate = self.router(x).softmax(dim=-1)
        prob, idx = gate.max(dim=-1)
        h = torch.relu(ExpertMatmul.apply(x, self.w_in, idx))
        y = ExpertMatmul.apply(h, self.w_out, idx)
        return y * prob.unsqueeze(-1).to(y.dtype)


class MoERegressor(nn.Module):
    def __init__(self, d_in=16, d_model=32, n_experts=4):
        super().__init__()
        self.inp = nn.Linear(d_in, d_model)
        self.moe = Top1MoE(d_model, 2 * d_model, n_experts)
        self.out = nn.Linear(d_model, 1)

    def forward(self, x):
        h = self.inp(x)
        return self.out(h + self.moe(h)).squeeze(-1)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    amp_on = device.type == "cuda"
    model = MoERegressor().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=amp_on)
    total = torch.zeros((), device=device)
    for step in range(8):
        x = torch.randn(64, 16, device=device)
        y = x[:, :4].sum(dim=1)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=amp_on):
            pred = model(x)
            loss = nn.functional.mse_loss(pred.float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        total += loss.detach()
    print("mean loss", (total / 8).item())


if __name__ == "__main__":
    main()
