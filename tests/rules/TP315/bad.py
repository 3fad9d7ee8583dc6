import torch
import torch.nn.functional as F
from torch.autograd import Function


class MaskedLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, mask):
        ctx.save_for_backward(x, weight, mask)
        return x.matmul((weight * mask).t())

    @staticmethod
    def backward(ctx, grad):
        x, weight, mask = ctx.saved_tensors
        return grad.matmul(weight * mask), grad.t().matmul(x) * mask, None


class Gram(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.transpose(0, 1) @ x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return x @ (grad + grad.transpose(0, 1))


class LowRankLinear(Function):
    @staticmethod
    def forward(ctx, x, u, v):
        ctx.save_for_backward(x, u, v)
        return F.linear(F.linear(x, v), u)

    @staticmethod
    @torch.cuda.amp.custom_bwd
    def backward(ctx, grad):
        x, u, v = ctx.saved_tensors
        return torch.mm(torch.mm(grad, u), v), None, None


class Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k):
        scores = torch.einsum("bid,bjd->bij", q, k)
        ctx.save_for_backward(q, k)
        return scores

    @staticmethod
    def backward(ctx, grad):
        q, k = ctx.saved_tensors
        return torch.bmm(grad, k), torch.bmm(grad.transpose(1, 2), q)


def train_step(model, x, optimizer):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).sum()
    loss.backward()
    optimizer.step()


class ChunkedLogits(torch.autograd.Function):
    # backward aligns two products by hand and forgets the third
    @staticmethod
    def forward(ctx, hidden, weight):
        ctx.save_for_backward(hidden, weight)
        return (hidden @ weight.to(hidden.dtype).t()).float()

    @staticmethod
    def backward(ctx, grad):
        hidden, weight = ctx.saved_tensors
        logits = hidden @ weight.t()
        g = (grad * logits.softmax(-1)).to(hidden.dtype)
        return g @ weight.to(hidden.dtype), (g.t() @ hidden).to(weight.dtype)
