# source: https://github.com/pytorch/pytorch/issues/51730
# area: AMP
# bug: under CUDA autocast the edge messages come out of nn.Linear as fp16, but they are scatter-added in place into an fp32 zeros buffer, which raises a dtype mismatch on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class EdgeConvLayer(nn.Module):
    """Sum-aggregation message passing: h_i' = norm(h_i + sum_j phi([h_i, h_j - h_i]))."""

    def __init__(self, dim):
        super().__init__()
        self.message_mlp = nn.Sequential(nn.Linear(2 * dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.norm = nn.LayerNorm(dim)

    def aggregate(self, messages, dst, num_nodes):
        out = torch.zeros(num_nodes, messages.size(1), device=messages.device)  # expect[agg]: any
        index = dst.unsqueeze(1).expand_as(messages)
        out.scatter_add_(0, index, messages)  # expect[agg]: any
        return out

    def forward(self, h, edge_index):
        src, dst = edge_index
        edge_feat = torch.cat([h[dst], h[src] - h[dst]], dim=1)
        messages = self.message_mlp(edge_feat)
        agg = self.aggregate(messages, dst, h.size(0))
        return self.norm(h + agg)


class PointCloudGNN(nn.Module):
    def __init__(self, in_dim=3, dim=32, layers=2, num_classes=5):
        super().__init__()
        self.inp = nn.Linear(in_dim, dim)
        self.layers = nn.ModuleList([EdgeConvLayer(dim) for _ in range(layers)])
        self.out = nn.Linear(dim, num_classes)

    def forward(self, pos, edge_index):
        h = self.inp(pos)
        for layer in self.layers:
            h = layer(h, edge_index)
        return self.out(h)


def knn_graph(pos, k):
    d = torch.cdist(pos, pos)
    nbrs = d.topk(k + 1, largest=False).indices[:, 1:]
    dst = torch.arange(pos.size(0), device=pos.device).repeat_interleave(k)
    return torch.stack([nbrs.reshape(-1), dst])


def train(device, steps=4):
    torch.manual_seed(0)
    model = PointCloudGNN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    use_amp = device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    pos = torch.randn(128, 3, device=device)
    labels = torch.randint(0, 5, (128,), device=device)
    edge_index = knn_graph(pos, k=8)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(pos, edge_index)
            loss = F.cross_entropy(logits, labels)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return loss.detach()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    final = train(device)
    print("final loss", float(final))
