# source: https://github.com/styalai/xLSTM-pytorch/issues/2
# area: device placement
# bug: the recurrent start states are plain tensor attributes built on the example input's device (CPU), so model.to(device) leaves them behind and the first recurrent matmul mixes cpu and cuda tensors
import torch
import torch.nn as nn
import torch.nn.functional as F


class SLSTMBlock(nn.Module):
    def __init__(self, x_example, hidden_size, num_heads=2):
        super().__init__()
        input_size = x_example.shape[-1]
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.norm = nn.LayerNorm(input_size)
        self.w_gates = nn.Linear(input_size, 4 * hidden_size)
        self.r_gates = nn.Linear(hidden_size, 4 * hidden_size, bias=False)
        self.group_norm = nn.GroupNorm(num_heads, hidden_size)
        self.proj = nn.Linear(hidden_size, input_size)
        start = torch.zeros(4, 1, hidden_size, device=x_example.device)  # expect[s]: any
        start[2] = 1.0
        self.ht_1, self.ct_1, self.nt_1, self.mt_1 = start.unbind(0)  # expect[s]: any

    def forward(self, x):
        batch, steps, _ = x.shape
        h = self.ht_1.expand(batch, -1)
        c = self.ct_1.expand(batch, -1)
        n = self.nt_1.expand(batch, -1)
        m = self.mt_1.expand(batch, -1)
        outputs = []
        for t in range(steps):
            xt = self.norm(x[:, t])
            gates = self.w_gates(xt) + self.r_gates(h)
            i_tilde, f_tilde, o_tilde, z_tilde = gates.chunk(4, dim=-1)
            m_new = torch.maximum(f_tilde + m, i_tilde)
            i = torch.exp(i_tilde - m_new)
            f = torch.exp(f_tilde + m - m_new)
            o = torch.sigmoid(o_tilde)
            z = torch.tanh(z_tilde)
            c = f * c + i * z
            n = f * n + i
            h = o * (c / n)
            m = m_new
            outputs.append(h)
        hs = torch.stack(outputs, dim=1)
        hs = self.group_norm(hs.transpose(1, 2)).transpose(1, 2)
        return x + self.proj(F.gelu(hs))


class SequenceClassifier(nn.Module):
    def __init__(self, x_example, hidden_size, num_blocks, num_classes):
        super().__init__()
        self.blocks = nn.ModuleList(
            [SLSTMBlock(x_example, hidden_size) for _ in range(num_blocks)]
        )
        self.head = nn.Linear(x_example.shape[-1], num_classes)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x[:, -1])


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    features, steps, classes = 12, 10, 3
    x_example = torch.zeros(1, steps, features)
    model = SequenceClassifier(x_example, hidden_size=16, num_blocks=2, num_classes=classes)
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    inputs = torch.randn(64, steps, features)
    labels = (inputs[:, :, 0].sum(dim=1) > 0).long() + (inputs[:, -1, 1] > 1).long()
    dataset = torch.utils.data.TensorDataset(inputs, labels)
    loader = torch.utils.data.DataLoader(dataset, batch_size=16, shuffle=True)

    for epoch in range(3):
        total = torch.zeros((), device=device)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()
        print(f"epoch {epoch} loss {(total / len(loader)).item():.4f}")


if __name__ == "__main__":
    main()
