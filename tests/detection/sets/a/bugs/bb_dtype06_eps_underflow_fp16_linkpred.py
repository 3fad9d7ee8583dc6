# source: https://github.com/pyg-team/pytorch_geometric/pull/2106
# area: dtype
# bug: reconstruction loss adds EPS=1e-15 to fp16 sigmoid scores produced under CUDA autocast; 1e-15 rounds to 0 in fp16, so saturated negatives give log(0) = -inf and the loss/gradients become inf/NaN
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
EPS = 1e-15
N, F_IN, HID = 60, 16, 32


class GCNEncoder(nn.Module):
    def __init__(self, in_dim, hid):
        super().__init__()
        self.lin1 = nn.Linear(in_dim, hid)
        self.lin2 = nn.Linear(hid, hid)

    def forward(self, x, adj_norm):
        h = torch.relu(adj_norm @ self.lin1(x))
        return adj_norm @ self.lin2(h)


def decode(z, edge_index):
    return (z[edge_index[0]] * z[edge_index[1]]).sum(dim=-1)


def recon_loss(z, pos_edges, neg_edges):
    pos = torch.sigmoid(decode(z, pos_edges))
    neg = torch.sigmoid(decode(z, neg_edges))
    pos_loss = -torch.log(pos + EPS).mean()  # expect[eps]: any
    neg_loss = -torch.log(1 - neg + EPS).mean()  # expect[eps]: any
    return pos_loss + neg_loss


def random_graph(n, m):
    edges = torch.randint(0, n, (2, m))
    adj = torch.zeros(n, n)
    adj[edges[0], edges[1]] = 1.0
    adj = ((adj + adj.t()) > 0).float() + torch.eye(n)
    d = adj.sum(1).pow(-0.5)
    return edges, d[:, None] * adj * d[None, :]


pos_edges, adj_norm = random_graph(N, 150)
x = torch.randn(N, F_IN, device=device)
adj_norm, pos_edges = adj_norm.to(device), pos_edges.to(device)

model = GCNEncoder(F_IN, HID).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

for epoch in range(40):
    neg_edges = torch.randint(0, N, pos_edges.shape, device=device)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
        z = model(x, adj_norm)
        loss = recon_loss(z, pos_edges, neg_edges)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    if epoch % 10 == 0:
        print(f"epoch {epoch} loss {loss.item():.4f}")
