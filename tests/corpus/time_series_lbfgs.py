"""Sine-wave prediction with two stacked LSTMCells in float64, trained with LBFGS and a
closure; forward builds its zero states and also predicts future steps."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

HIDDEN = 16


def generate_sine_wave(n_series=10, length=36, period=12, seed=2):
    rng = np.random.RandomState(seed)
    x = np.arange(length) + rng.randint(-4 * period, 4 * period, n_series).reshape(n_series, 1)
    return np.sin(x / period).astype("float64")


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, HIDDEN)
        self.lstm2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2, help="LBFGS steps")
    opt = parser.parse_args()
    np.random.seed(0)
    torch.manual_seed(0)
    data = generate_sine_wave()
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    seq = Sequence()
    seq.double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=3)
    for i in range(opt.steps):

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        print(f"STEP {i} loss {loss.item():.6f}")
        with torch.no_grad():
            future = 6
            pred = seq(test_input, future=future)
            test_loss = criterion(pred[:, :-future], test_target)
            y = pred.detach().numpy()
        print(f"test loss {test_loss.item():.6f}, forecast range {y[:, -future:].min():.3f}..{y[:, -future:].max():.3f}")
    print(f"final loss {test_loss.item():.8f}")
