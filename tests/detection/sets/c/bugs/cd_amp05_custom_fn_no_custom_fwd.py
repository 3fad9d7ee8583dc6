# source: https://github.com/silvandeleemput/memcnn/pull/60
# area: AMP
# bug: the custom autograd Function has no custom_fwd/custom_bwd, so on a GPU its backward runs outside autocast and multiplies the fp16 grad by the fp32 weight, raising "expected m1 and m2 to have the same dtype"
import math

import torch
import torch.nn as nn


class FusedLinearGELU(torch.autograd.Function):
    """Linear + GELU that stores only the pre-activation to save memory."""

    @staticmethod
    def forward(ctx, x, weight, bias):  # expect[w]: any
        pre = torch.addmm(bias, x, weight.t())
        ctx.save_for_backward(x, weight, pre)
        return 0.5 * pre * (1.0 + torch.erf(pre / math.sqrt(2.0)))

    @staticmethod
    def backward(ctx, grad_out):  # expect[w]: any
        x, weight, pre = ctx.saved_tensors
        cdf = 0.5 * (1.0 + torch.erf(pre / math.sqrt(2.0)))
        pdf = torch.exp(-0.5 * pre * pre) / math.sqrt(2.0 * math.pi)
        grad_pre = grad_out * (cdf + pre * pdf)
        grad_x = grad_pre @ weight
        grad_w = grad_pre.t() @ x
        return grad_x, grad_w, grad_pre.sum(0)


class FusedFFN(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.w_in = nn.Parameter(torch.empty(d_hidden, d_model))
        self.b_in = nn.Parameter(torch.zeros(d_hidden))
        nn.init.kaiming_uniform_(self.w_in, a=math.sqrt(5))
        self.proj = nn.Linear(d_hidden, d_model)

    def forward(self, x):
        shape = x.shape
        h = FusedLinearGELU.apply(x.reshape(-1, shape[-1]), self.w_in, self.b_in)
        return self.proj(h).reshape(shape)


class TinyEncoder(nn.Module):
    def __init__(self, vocab=500, d_model=64, n_layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"norm": nn.LayerNorm(d_model), "ffn": FusedFFN(d_model, 4 * d_model)})
            for _ in range(n_layers)
        )
        self.lm_head = nn.Linear(d_model, vocab)

    def forward(self, ids):
        h = self.embed(ids)
        for blk in self.blocks:
            h = h + blk["ffn"](blk["norm"](h))
        return self.lm_head(h)


def main(steps=20):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = TinyEncoder().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    data = torch.randint(0, 500, (64, 33), device=device)
    for step in range(steps):
        batch = data[torch.randint(0, data.shape[0], (16,), device=device)]
        inp, tgt = batch[:, :-1], batch[:, 1:]
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(inp)
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(f"final loss {loss.item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
