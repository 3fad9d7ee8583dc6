# twin of: bugs/ca_dev08_tour_gather_randperm_index.py
# area: device placement
# correct: the baseline permutations are drawn with device=coords.device, so gather gets an index on the same device as the coordinates
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

N_CITIES, BATCH = 10, 32


class CityScorer(nn.Module):
    """Scores each city; the tour visits cities in order of decreasing score."""

    def __init__(self, hid=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hid), nn.ReLU(), nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, 1))

    def forward(self, coords):
        return self.net(coords).squeeze(-1)


def tour_length(coords, tour):
    """coords: (B, N, 2); tour: (B, N) permutation indices."""
    d = coords.gather(1, tour.unsqueeze(-1).expand_as(coords))
    return (d[:, 1:] - d[:, :-1]).norm(p=2, dim=2).sum(1) + (d[:, 0] - d[:, -1]).norm(p=2, dim=1)


def random_baseline(coords, n_samples=4):
    b, n, _ = coords.shape
    lengths = []
    for _ in range(n_samples):
        tours = torch.stack([torch.randperm(n, device=coords.device) for _ in range(b)])
        lengths.append(tour_length(coords, tours))
    return torch.stack(lengths).mean(0)


def main():
    model = CityScorer().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(20):
        coords = torch.rand(BATCH, N_CITIES, 2, device=device)
        scores = model(coords)
        tour = scores.argsort(dim=1, descending=True)
        length = tour_length(coords, tour)
        with torch.no_grad():
            baseline = random_baseline(coords)
        logp = torch.log_softmax(scores, dim=1).gather(1, tour[:, :1]).squeeze(1)
        loss = ((length - baseline).detach() * logp).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            print(f"step {step} tour {length.mean().item():.3f} baseline {baseline.mean().item():.3f}")


if __name__ == "__main__":
    main()
