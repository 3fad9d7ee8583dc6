# twin of: bugs/dtype13_integer_matmul_on_device.py
# area: dtype
# correct: the counts are a float matmul, which every device has; the result is the same
import torch
from torch import nn
from torch.nn import functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
n_nodes, n_cls = 12, 3
edges = torch.randint(0, n_nodes, (2, 30))
labels = torch.randint(0, n_cls, (n_nodes,))


def neighbour_label_counts(edges, labels):
    adj = torch.zeros(n_nodes, n_nodes, dtype=torch.long, device=labels.device)
    adj[edges[0], edges[1]] = 1
    return adj.float() @ F.one_hot(labels, n_cls).float()


model = nn.Linear(n_cls, n_cls).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    counts = neighbour_label_counts(edges.to(device), labels.to(device))
    loss = F.cross_entropy(model(counts), labels.to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.3f}")
