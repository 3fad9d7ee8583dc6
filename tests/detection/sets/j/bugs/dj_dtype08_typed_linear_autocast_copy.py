# source: https://github.com/pyg-team/pytorch_geometric/pull/7473
# area: dtype
# bug: the output buffer is allocated in the input's float32 dtype while F.linear returns fp16 under GPU autocast, so index_copy_ fails with a Float/Half dtype mismatch
import torch
import torch.nn as nn
import torch.nn.functional as F


class TypedLinear(nn.Module):
    """A separate projection per node type (e.g. paper / author / venue)."""

    def __init__(self, in_channels, out_channels, num_types):
        super().__init__()
        self.out_channels = out_channels
        self.num_types = num_types
        self.weight = nn.Parameter(torch.empty(num_types, out_channels, in_channels))
        self.bias = nn.Parameter(torch.zeros(num_types, out_channels))
        for w in self.weight:
            nn.init.kaiming_uniform_(w, a=5 ** 0.5)

    def forward(self, x, type_index):
        out = x.new_empty(x.size(0), self.out_channels)  # expect[w]: any
        for t, idx in enumerate(type_index):
            h = F.linear(x.index_select(0, idx), self.weight[t], self.bias[t])
            out.index_copy_(0, idx, h)  # expect[w]: any
        return out


class HeteroNodeClassifier(nn.Module):
    def __init__(self, in_channels, hidden, num_classes, num_types):
        super().__init__()
        self.proj = TypedLinear(in_channels, hidden, num_types)
        self.mix = nn.Linear(hidden, hidden)
        self.cls = nn.Linear(hidden, num_classes)

    def forward(self, x, type_index, adj):
        h = F.relu(self.proj(x, type_index))
        h = F.relu(self.mix(adj @ h))
        return self.cls(h)


def make_graph(num_nodes=200, in_channels=24, num_types=3, num_classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    node_type = torch.randint(0, num_types, (num_nodes,), generator=g)
    x = torch.randn(num_nodes, in_channels, generator=g)
    y = (x[:, :num_classes] + node_type[:, None]).argmax(1)
    src = torch.randint(0, num_nodes, (num_nodes * 4,), generator=g)
    dst = torch.randint(0, num_nodes, (num_nodes * 4,), generator=g)
    adj = torch.zeros(num_nodes, num_nodes)
    adj[dst, src] = 1.0
    adj += torch.eye(num_nodes)
    adj /= adj.sum(1, keepdim=True)
    type_index = [torch.nonzero(node_type == t).squeeze(1) for t in range(num_types)]
    return x, y, adj, type_index


def train(epochs=10):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    x, y, adj, type_index = make_graph()
    x, y, adj = x.to(device), y.to(device), adj.to(device)
    type_index = [idx.to(device) for idx in type_index]

    model = HeteroNodeClassifier(x.size(1), 64, 4, len(type_index)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    for _ in range(epochs):
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(x, type_index, adj), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    with torch.no_grad(), torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
        acc = (model(x, type_index, adj).argmax(1) == y).float().mean()
    print(f"final loss {loss.item():.4f}, train accuracy {acc.item():.3f}")


if __name__ == "__main__":
    train()
