# source: https://github.com/cvg/glue-factory/issues/76
# area: dtype
# bug: the mean-aggregation buffer is allocated as float32 while the messages come out of fp16 autocast on the GPU, so the in-place scatter_reduce_ fails with "Expected self.dtype to be equal to src.dtype"
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
USE_AMP = device.type == "cuda"


def mean_aggregate(messages, dst, num_nodes):
    out = torch.zeros(num_nodes, messages.size(1), device=messages.device)  # expect[w]: any
    index = dst.unsqueeze(1).expand_as(messages)
    return out.scatter_reduce_(0, index, messages, reduce="mean", include_self=False)  # expect[w]: any


class MessagePassingLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.msg = nn.Linear(2 * dim, dim)
        self.update = nn.Linear(2 * dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, h, edge_index):
        src, dst = edge_index
        m = F.gelu(self.msg(torch.cat([h[src], h[dst]], dim=-1)))
        agg = mean_aggregate(m, dst, h.size(0))
        return self.norm(h + self.update(torch.cat([h, agg.to(h.dtype)], dim=-1)))


class JunctionMatcherGNN(nn.Module):
    def __init__(self, in_dim=8, dim=64, layers=3, num_classes=4):
        super().__init__()
        self.encode = nn.Linear(in_dim, dim)
        self.layers = nn.ModuleList(MessagePassingLayer(dim) for _ in range(layers))
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x, edge_index):
        h = self.encode(x)
        for layer in self.layers:
            h = layer(h, edge_index)
        return self.head(h)


def random_graph(num_nodes=200, num_edges=800, in_dim=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(num_nodes, in_dim, generator=g)
    edge_index = torch.randint(0, num_nodes, (2, num_edges), generator=g)
    y = torch.randint(0, 4, (num_nodes,), generator=g)
    return x, edge_index, y


def train(model, graphs, epochs=2):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=USE_AMP)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for x, edge_index, y in graphs:
            x, edge_index, y = x.to(device), edge_index.to(device), y.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=USE_AMP):
                logits = model(x, edge_index)
                loss = F.cross_entropy(logits.float(), y)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            total += loss.detach()
        print(f"epoch {epoch}: loss {(total / len(graphs)).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    graphs = [random_graph(seed=s) for s in range(3)]
    model = JunctionMatcherGNN().to(device)
    train(model, graphs)
