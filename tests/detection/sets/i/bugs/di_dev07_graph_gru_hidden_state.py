# source: https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/20
# area: device placement
# bug: when no hidden state is passed, the recurrent graph cell creates H with torch.zeros on the CPU regardless of the input's device
import torch
import torch.nn as nn


def normalized_adjacency(num_nodes, edges):
    adj = torch.eye(num_nodes)
    for i, j in edges:
        adj[i, j] = adj[j, i] = 1.0
    deg_inv_sqrt = adj.sum(dim=1).rsqrt()
    return deg_inv_sqrt[:, None] * adj * deg_inv_sqrt[None, :]


class GraphConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, adj):
        return adj @ self.lin(x)


class GConvGRU(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.out_channels = out_channels
        self.conv_z = GraphConv(in_channels + out_channels, out_channels)
        self.conv_r = GraphConv(in_channels + out_channels, out_channels)
        self.conv_h = GraphConv(in_channels + out_channels, out_channels)

    def _set_hidden_state(self, X, H):
        if H is None:
            H = torch.zeros(X.shape[0], self.out_channels)  # expect: any
        return H

    def forward(self, X, adj, H=None):
        H = self._set_hidden_state(X, H)
        Z = torch.sigmoid(self.conv_z(torch.cat([X, H], dim=-1), adj))
        R = torch.sigmoid(self.conv_r(torch.cat([X, H], dim=-1), adj))
        H_tilde = torch.tanh(self.conv_h(torch.cat([X, H * R], dim=-1), adj))
        return Z * H + (1 - Z) * H_tilde


class TrafficForecaster(nn.Module):
    def __init__(self, num_nodes, edges, in_channels=2, hidden=32):
        super().__init__()
        self.register_buffer("adj", normalized_adjacency(num_nodes, edges))
        self.recurrent = GConvGRU(in_channels, hidden)
        self.readout = nn.Linear(hidden, 1)

    def forward(self, window):
        H = None
        for x_t in window:
            H = self.recurrent(x_t, self.adj, H)
        return self.readout(torch.relu(H)).squeeze(-1)


def make_signal(num_nodes, steps, device):
    t = torch.arange(steps, dtype=torch.float32)
    phase = torch.linspace(0, 3.14, num_nodes)
    speed = torch.sin(0.2 * t[:, None] + phase[None, :])
    volume = torch.cos(0.1 * t[:, None] - phase[None, :])
    return torch.stack([speed, volume], dim=-1).to(device)


def windows(signal, lags):
    for start in range(signal.shape[0] - lags - 1):
        yield signal[start:start + lags], signal[start + lags, :, 0]


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    num_nodes = 20
    edges = [(i, (i + 1) % num_nodes) for i in range(num_nodes)] + [(0, 10), (5, 15)]
    model = TrafficForecaster(num_nodes, edges).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    signal = make_signal(num_nodes, 60, device)
    for epoch in range(3):
        total = torch.zeros((), device=device)
        for n, (window, target) in enumerate(windows(signal, lags=6), start=1):
            loss = torch.mean((model(window) - target) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch} mse {(total / n).item():.4f}")
