# twin of: bugs/dd_dev09_sliced_wasserstein_generator.py
# area: device placement
# correct: the seeded generator is created on the same device as the particles, so torch.randn can draw the projections there
import math

import torch


class SlicedWasserstein:
    """Monte-Carlo sliced Wasserstein-2 distance with reproducible projections."""

    def __init__(self, n_projections=50, seed=0, device="cpu"):
        self.n_projections = n_projections
        self.rng = torch.Generator(device=device)
        self.rng.manual_seed(seed)

    def random_projections(self, dim, like):
        proj = torch.randn(dim, self.n_projections, generator=self.rng, dtype=like.dtype, device=like.device)
        return proj / proj.norm(dim=0, keepdim=True)

    @staticmethod
    def _sorted_projection(points, proj):
        values, _ = torch.sort(points @ proj, dim=0)
        return values

    def __call__(self, x_s, x_t):
        if x_s.shape[0] != x_t.shape[0]:
            raise ValueError("this estimator expects equally sized point clouds")
        proj = self.random_projections(x_s.shape[1], x_s)
        ps = self._sorted_projection(x_s, proj)
        pt = self._sorted_projection(x_t, proj)
        return (ps - pt).pow(2).mean()


def two_moons(n, device, noise=0.05, seed=1):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(n, generator=g) * math.pi
    upper = torch.stack((torch.cos(t), torch.sin(t)), dim=1)
    lower = torch.stack((1.0 - torch.cos(t), 0.5 - torch.sin(t)), dim=1)
    pts = torch.cat((upper[: n // 2], lower[n // 2:]), dim=0)
    return (pts + noise * torch.randn(n, 2, generator=g)).to(device)


def gradient_flow(device, n_particles=256, steps=120, lr=0.05):
    target = two_moons(n_particles, device)
    particles = torch.randn(n_particles, 2, device=device, requires_grad=True)
    sw = SlicedWasserstein(n_projections=32, seed=0, device=device)
    history = []
    for step in range(steps):
        loss = sw(particles, target)
        grad, = torch.autograd.grad(loss, particles)
        with torch.no_grad():
            particles -= lr * n_particles * grad
        if step % 40 == 0:
            history.append(loss.detach())
    return particles.detach(), torch.stack(history)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    final, hist = gradient_flow(device)
    print("sliced W2 over time:", [round(v, 4) for v in hist.cpu().tolist()])
    print("final particle mean:", final.mean(dim=0).cpu().tolist())
