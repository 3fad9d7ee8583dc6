import torch
from torch.cuda.amp import custom_bwd, custom_fwd


class MaskedLinear(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x.matmul(weight.t())

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return grad.matmul(weight), grad.t().matmul(x)


class LegacyGram(torch.autograd.Function):
    @staticmethod
    @custom_fwd
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.t() @ x

    @staticmethod
    @custom_bwd
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return x @ (grad + grad.t())


class Float32Linear(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x @ weight.t()

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return grad @ weight, grad.t() @ x


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad.neg() * ctx.alpha, None


class ManualFloat32(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        with torch.autocast("cuda", enabled=False):
            x, weight = x.float(), weight.float()
            ctx.save_for_backward(x, weight)
            return x @ weight.t()

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad = grad.float()
        return grad @ weight, grad.t() @ x


def train_step(model, x, optimizer, scaler):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).sum()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()


class ChunkedLogits(torch.autograd.Function):
    # every product of backward casts a factor to the other's dtype
    @staticmethod
    def forward(ctx, hidden, weight):
        ctx.save_for_backward(hidden, weight)
        return (hidden @ weight.to(hidden.dtype).t()).float()

    @staticmethod
    def backward(ctx, grad):
        hidden, weight = ctx.saved_tensors
        logits = hidden @ weight.to(hidden.dtype).t()
        g = (grad * logits.softmax(-1)).to(hidden.dtype)
        return g @ weight.type_as(g), (g.t() @ hidden).to(weight.dtype)
