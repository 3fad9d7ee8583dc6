# source: https://github.com/KevinMusgrave/pytorch-metric-learning/issues/139
# area: device placement
# bug: the proxy-anchor loss owns learnable proxies (an nn.Parameter) but only the embedding network is moved to the GPU, so the proxies stay on the CPU and the similarity matmul mixes devices
import torch
import torch.nn as nn
import torch.nn.functional as F


class ProxyAnchorLoss(nn.Module):
    def __init__(self, num_classes, embedding_size, margin=0.1, alpha=32.0):
        super().__init__()
        self.proxies = nn.Parameter(torch.randn(num_classes, embedding_size))
        nn.init.kaiming_normal_(self.proxies, mode="fan_out")
        self.num_classes = num_classes
        self.margin = margin
        self.alpha = alpha

    def forward(self, embeddings, labels):
        cos = F.normalize(embeddings, dim=1) @ F.normalize(self.proxies, dim=1).t()
        pos_mask = F.one_hot(labels, self.num_classes).to(cos.dtype)
        neg_mask = 1.0 - pos_mask
        pos_exp = torch.exp(-self.alpha * (cos - self.margin))
        neg_exp = torch.exp(self.alpha * (cos + self.margin))
        with_pos = (pos_mask.sum(dim=0) > 0).to(cos.dtype)
        num_valid = with_pos.sum().clamp(min=1.0)
        pos_term = torch.log1p((pos_exp * pos_mask).sum(dim=0)) * with_pos
        neg_term = torch.log1p((neg_exp * neg_mask).sum(dim=0))
        return pos_term.sum() / num_valid + neg_term.sum() / self.num_classes


class EmbeddingNet(nn.Module):
    def __init__(self, in_features, embedding_size):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(in_features, 64), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Linear(64, 64), nn.ReLU(),
        )
        self.embedder = nn.Linear(64, embedding_size)

    def forward(self, x):
        return self.embedder(self.trunk(x))


class MetricTrainer:
    def __init__(self, model, loss_fn, device, lr=1e-3, proxy_lr_scale=100.0):
        self.model = model
        self.loss_fn = loss_fn
        self.device = device
        self.optimizer = torch.optim.AdamW([
            {"params": model.parameters(), "lr": lr},
            {"params": loss_fn.parameters(), "lr": lr * proxy_lr_scale},
        ])

    def train_epoch(self, loader):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for x, y in loader:
            x = x.to(self.device, non_blocking=True)
            y = y.to(self.device, non_blocking=True)
            loss = self.loss_fn(self.model(x), y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            total += loss.detach()
        return (total / len(loader)).item()


def make_loader(num_classes, per_class, in_features, use_cuda):
    centers = torch.randn(num_classes, in_features) * 3
    labels = torch.arange(num_classes).repeat_interleave(per_class)
    feats = centers[labels] + torch.randn(len(labels), in_features)
    ds = torch.utils.data.TensorDataset(feats, labels)
    return torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True, pin_memory=use_cuda)


def main():
    torch.manual_seed(0)
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    num_classes, embedding_size = 6, 16
    model = EmbeddingNet(in_features=20, embedding_size=embedding_size).to(device)
    loss_fn = ProxyAnchorLoss(num_classes, embedding_size)  # expect: any
    trainer = MetricTrainer(model, loss_fn, device)
    loader = make_loader(num_classes, per_class=40, in_features=20, use_cuda=use_cuda)
    for epoch in range(3):
        print(f"epoch {epoch}: proxy-anchor loss {trainer.train_epoch(loader):.4f}")


if __name__ == "__main__":
    main()
