# twin of: bugs/di_dtype02_skeleton_hop_int_matmul.py
# area: dtype
# correct: the adjacency is built as float32, so the repeated matrix products use the floating-point CUDA GEMM that exists on every device
import torch
import torch.nn as nn
import torch.nn.functional as F

EDGES = [(0, 1), (1, 2), (2, 3), (3, 4), (1, 5), (5, 6), (6, 7), (1, 8),
         (8, 9), (9, 10), (8, 11), (11, 12), (0, 13), (0, 14)]


class GraphConfig:
    num_joints = 15
    max_hop = 2
    in_channels = 2
    hidden = 32
    num_classes = 6


def hop_adjacency(num_joints, edges, max_hop, device):
    adj = torch.eye(num_joints, device=device)
    src = torch.tensor([e[0] for e in edges], device=device)
    dst = torch.tensor([e[1] for e in edges], device=device)
    adj[src, dst] = 1
    adj[dst, src] = 1
    hops = [torch.eye(num_joints, device=device)]
    reach = adj.clone()
    for _ in range(1, max_hop + 1):
        hops.append((reach > 0).float())
        reach = reach @ adj
    return torch.stack(hops)


def normalize_adjacency(a):
    deg = a.sum(-1).clamp(min=1.0)
    return a / deg.unsqueeze(-1)


class SpatialGraphConv(nn.Module):
    def __init__(self, in_ch, out_ch, num_hops):
        super().__init__()
        self.proj = nn.Conv2d(in_ch, out_ch * num_hops, kernel_size=1)
        self.num_hops = num_hops

    def forward(self, x, adj):
        n, _, t, v = x.shape
        x = self.proj(x).view(n, self.num_hops, -1, t, v)
        return torch.einsum("nkctv,kvw->nctw", x, adj)


class SkeletonClassifier(nn.Module):
    def __init__(self, cfg, device):
        super().__init__()
        adj = hop_adjacency(cfg.num_joints, EDGES, cfg.max_hop, device)
        self.register_buffer("adj", normalize_adjacency(adj))
        k = cfg.max_hop + 1
        self.gc1 = SpatialGraphConv(cfg.in_channels, cfg.hidden, k)
        self.gc2 = SpatialGraphConv(cfg.hidden, cfg.hidden, k)
        self.temporal = nn.Conv2d(cfg.hidden, cfg.hidden, kernel_size=(9, 1), padding=(4, 0))
        self.fc = nn.Linear(cfg.hidden, cfg.num_classes)

    def forward(self, x):
        x = F.relu(self.gc1(x, self.adj))
        x = F.relu(self.temporal(self.gc2(x, self.adj)))
        return self.fc(x.mean(dim=(2, 3)))


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = GraphConfig()
    model = SkeletonClassifier(cfg, device).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    poses = torch.randn(64, cfg.in_channels, 30, cfg.num_joints)
    labels = torch.randint(0, cfg.num_classes, (64,))
    for step in range(5):
        idx = torch.randint(0, 64, (16,))
        x, y = poses[idx].to(device), labels[idx].to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
