"""A quantised layer trained with a straight-through estimator written as a custom
autograd Function; its weight starts as torch.Tensor(out, in) and is initialised in
reset_parameters; a plain tensor attribute scales the activations."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, levels):
        ctx.save_for_backward(input)
        return torch.round(input * levels) / levels

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input.abs() > 1] = 0
        return grad_input, None


class QuantLinear(nn.Module):
    def __init__(self, in_features, out_features, levels=8):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(out_features, in_features))
        self.bias = nn.Parameter(torch.Tensor(out_features))
        self.levels = levels
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        bound = 1 / math.sqrt(self.weight.size(1))
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        w = RoundSTE.apply(torch.tanh(self.weight), self.levels)
        return F.linear(x, w, self.bias)


class QuantNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = QuantLinear(10, 32)
        self.fc2 = QuantLinear(32, 2)
        self.act_scale = torch.tensor(0.5)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)) * self.act_scale)


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(256, 10, generator=g)
    y = (x[:, :5].sum(1) > x[:, 5:].sum(1)).long()
    model = QuantNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(40):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    x_test = torch.randn(128, 10, generator=g)
    y_test = (x_test[:, :5].sum(1) > x_test[:, 5:].sum(1)).long()
    with torch.no_grad():
        test_loss = F.cross_entropy(model(x_test), y_test)
    print(f"final loss {test_loss.item():.8f}")


if __name__ == "__main__":
    main()
