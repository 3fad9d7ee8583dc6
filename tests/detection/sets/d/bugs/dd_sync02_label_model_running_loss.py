# source: https://github.com/BatsResearch/labelmodels/issues/4
# area: transfer & sync
# bug: running_loss sums the non-detached loss tensors, so every batch's autograd graph stays alive on the GPU for the whole epoch
import math

import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class LearningConfig:
    epochs: int = 3
    batch_size: int = 64
    step_size: float = 0.01
    prior_weight: float = 0.1
    random_seed: int = 0


class NaiveBayesLabelModel(nn.Module):
    """Generative label model over votes from weak labeling functions (0 = abstain)."""

    def __init__(self, num_classes, num_lfs, init_acc=0.7):
        super().__init__()
        self.num_classes = num_classes
        self.class_balance = nn.Parameter(torch.zeros(num_classes))
        logit = torch.log(torch.tensor(init_acc / (1 - init_acc)))
        self.accuracy = nn.Parameter(torch.full((num_lfs,), float(logit)))
        self.propensity = nn.Parameter(torch.zeros(num_lfs))

    def log_likelihood(self, votes):
        fires = (votes > 0).float()
        log_prop = nn.functional.logsigmoid(self.propensity)
        log_noprop = nn.functional.logsigmoid(-self.propensity)
        log_acc = nn.functional.logsigmoid(self.accuracy)
        log_err = nn.functional.logsigmoid(-self.accuracy) - math.log(self.num_classes - 1)
        ll = []
        for c in range(1, self.num_classes + 1):
            agree = (votes == c).float()
            per_lf = fires * (log_prop + agree * log_acc + (1 - agree) * log_err) + (1 - fires) * log_noprop
            ll.append(per_lf.sum(dim=1))
        joint = torch.stack(ll, dim=1) + torch.log_softmax(self.class_balance, dim=0)
        return torch.logsumexp(joint, dim=1)

    def regularization(self, weight):
        return weight * (self.accuracy ** 2).sum()


def synthetic_votes(n, num_lfs, num_classes, seed):
    g = torch.Generator().manual_seed(seed)
    truth = torch.randint(1, num_classes + 1, (n,), generator=g)
    fire = torch.rand(n, num_lfs, generator=g) < 0.4
    correct = torch.rand(n, num_lfs, generator=g) < 0.75
    noise = torch.randint(1, num_classes + 1, (n, num_lfs), generator=g)
    votes = torch.where(correct, truth.unsqueeze(1), noise)
    return torch.where(fire, votes, torch.zeros_like(votes))


def estimate_label_model(model, votes, config, device):
    optimizer = torch.optim.SGD(model.parameters(), lr=config.step_size)
    votes = votes.to(device)
    n = votes.shape[0]
    for epoch in range(config.epochs):
        perm = torch.randperm(n, device=device)
        running_loss = 0.0
        for start in range(0, n, config.batch_size):
            batch = votes[perm[start:start + config.batch_size]]
            optimizer.zero_grad()
            loss = -model.log_likelihood(batch).mean() + model.regularization(config.prior_weight)
            loss.backward()
            optimizer.step()
            running_loss += loss  # expect: any
        epoch_loss = running_loss / max(1, n // config.batch_size)
        print(f"epoch {epoch}: loss {epoch_loss.item():.4f}")
    return model


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = LearningConfig()
    torch.manual_seed(cfg.random_seed)
    votes = synthetic_votes(2000, num_lfs=12, num_classes=3, seed=cfg.random_seed)
    lm = NaiveBayesLabelModel(num_classes=3, num_lfs=12).to(device)
    estimate_label_model(lm, votes, cfg, device)
    print("learned accuracies:", torch.sigmoid(lm.accuracy.detach()).cpu().numpy().round(3))
