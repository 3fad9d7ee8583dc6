# twin of: bugs/dn_dev08_ablation_mask.py
# area: device placement
# correct: the feature-group index is built once on the inputs' device, so every mask derived from it is on the GPU too
import torch
import torch.nn as nn


class TabularRiskModel(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, 64), nn.ReLU(), nn.Dropout(0.1),
                                 nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class FeatureAblation:
    """Attributes a scalar output to groups of input features by replacing them with a baseline."""

    def __init__(self, forward_func):
        self.forward_func = forward_func

    @staticmethod
    def _group_index(feature_groups, device):
        return torch.as_tensor(feature_groups, dtype=torch.long, device=device)

    @torch.no_grad()
    def attribute(self, inputs, baselines=0.0, feature_groups=None):
        n_features = inputs.shape[1]
        if feature_groups is None:
            feature_groups = list(range(n_features))
        if not torch.is_tensor(baselines):
            baselines = torch.full_like(inputs, float(baselines))
        original = self.forward_func(inputs)
        attributions = torch.zeros_like(inputs)
        group_index = self._group_index(feature_groups, inputs.device)
        for group_id in sorted(set(feature_groups)):
            current_mask = group_index == group_id
            ablated = torch.where(current_mask, baselines, inputs)
            delta = original - self.forward_func(ablated)
            attributions += (delta / current_mask.sum())[:, None] * current_mask
        return attributions


def standardize(x):
    return (x - x.mean(dim=0)) / x.std(dim=0).clamp(min=1e-6)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    n_features = 12
    x = standardize(torch.randn(512, n_features) * torch.linspace(0.5, 3.0, n_features))
    y = (x[:, 0] * 2 - x[:, 3] + 0.5 * x[:, 7] > 0).float()
    model = TabularRiskModel(n_features).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x_dev, y_dev = x.to(device), y.to(device)
    for _ in range(30):
        loss = nn.functional.binary_cross_entropy_with_logits(model(x_dev), y_dev)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    groups = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    explainer = FeatureAblation(model)
    attr = explainer.attribute(x_dev[:64], baselines=0.0, feature_groups=groups)
    importance = attr.abs().mean(dim=0).cpu()
    ranking = importance.argsort(descending=True).tolist()
    print("feature ranking:", ranking)
    print("importance:", importance.numpy().round(3))


if __name__ == "__main__":
    main()
