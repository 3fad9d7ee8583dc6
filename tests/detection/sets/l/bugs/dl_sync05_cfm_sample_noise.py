# source: https://github.com/atong01/conditional-flow-matching/issues/102
# area: transfer & sync
# bug: the sampling helper draws the start noise on the CPU and copies it to the GPU instead of creating it there
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TimeConditionedMLP(nn.Module):
    def __init__(self, dim=16, n_classes=10, hidden=128):
        super().__init__()
        self.label_emb = nn.Embedding(n_classes, 16)
        self.net = nn.Sequential(
            nn.Linear(dim + 1 + 16, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, dim),
        )

    def forward(self, t, x, y):
        t = t.reshape(-1, 1).expand(x.size(0), 1)
        return self.net(torch.cat([x, t, self.label_emb(y)], dim=1))


class ConditionalFlowMatcher:
    def __init__(self, sigma=0.0):
        self.sigma = sigma

    def sample_location_and_conditional_flow(self, x0, x1):
        t = torch.rand(x0.size(0), 1, device=x0.device)
        xt = t * x1 + (1 - t) * x0
        if self.sigma > 0:
            xt = xt + self.sigma * torch.randn_like(xt)
        return t, xt, x1 - x0


def make_class_data(n=4096, dim=16, n_classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(n_classes, dim, generator=g) * 2
    y = torch.randint(0, n_classes, (n,), generator=g)
    return means[y] + 0.2 * torch.randn(n, dim, generator=g), y


@torch.no_grad()
def generate_samples(model, n_per_class=10, dim=16, n_classes=10, steps=50):
    model.eval()
    x = torch.randn(n_per_class * n_classes, dim).to(device)  # expect: any
    y = torch.arange(n_classes, device=device).repeat(n_per_class)
    dt = 1.0 / steps
    for i in range(steps):
        t = torch.full((1, 1), i * dt, device=device)
        x = x + dt * model(t, x, y)
    model.train()
    return x


def main():
    x1_all, y_all = make_class_data()
    ds = torch.utils.data.TensorDataset(x1_all, y_all)
    loader = torch.utils.data.DataLoader(ds, batch_size=256, shuffle=True, drop_last=True)
    model = TimeConditionedMLP().to(device)
    fm = ConditionalFlowMatcher(sigma=0.01)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for x1, y in loader:
            x1, y = x1.to(device), y.to(device)
            x0 = torch.randn_like(x1)
            t, xt, ut = fm.sample_location_and_conditional_flow(x0, x1)
            loss = (model(t, xt, y) - ut).pow(2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        samples = generate_samples(model)
        print(f"epoch {epoch}: sample mean norm {samples.norm(dim=1).mean().item():.3f}")


if __name__ == "__main__":
    main()
