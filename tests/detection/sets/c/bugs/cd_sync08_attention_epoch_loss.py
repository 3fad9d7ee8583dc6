# source: https://github.com/jostmey/NakedAttention/issues/1
# area: transfer & sync
# bug: the epoch loss is accumulated from the undetached batch loss, so each batch's autograd graph is chained into e_train and kept alive for the whole epoch
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SelfAttentionClassifier(nn.Module):
    def __init__(self, n_pixels=64, d_model=32, n_classes=10):
        super().__init__()
        self.embed_value = nn.Linear(1, d_model)
        self.position = nn.Parameter(0.02 * torch.randn(n_pixels, d_model))
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.readout = nn.Linear(d_model, n_classes)

    def forward(self, x):
        h = self.embed_value(x.flatten(1).unsqueeze(-1)) + self.position
        q, k, v = self.query(h), self.key(h), self.value(h)
        weights = torch.softmax(q @ k.transpose(1, 2) / h.shape[-1] ** 0.5, dim=-1)
        pooled = (weights @ v).mean(dim=1)
        return self.readout(pooled)


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    protos = torch.randn(10, 8, 8, generator=torch.Generator().manual_seed(123))
    images = protos[labels] + 0.5 * torch.randn(n, 8, 8, generator=g)
    return TensorDataset(images, labels)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    loader_train = DataLoader(make_split(640, 1), batch_size=64, shuffle=True)
    loader_test = DataLoader(make_split(256, 2), batch_size=128)
    model = SelfAttentionClassifier().to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(3):
        e_train, a_train = 0.0, 0.0
        model.train()
        for images, labels in loader_train:
            images, labels = images.to(device), labels.to(device)
            logits = model(images)
            e_batch = loss_fn(logits, labels)
            a_batch = (logits.argmax(dim=1) == labels).float().mean()
            optimizer.zero_grad()
            e_batch.backward()
            optimizer.step()
            e_train += e_batch / len(loader_train)  # expect: any
            a_train += a_batch.detach() / len(loader_train)

        e_test, a_test = 0.0, 0.0
        model.eval()
        with torch.no_grad():
            for images, labels in loader_test:
                images, labels = images.to(device), labels.to(device)
                logits = model(images)
                e_test += loss_fn(logits, labels) / len(loader_test)
                a_test += (logits.argmax(dim=1) == labels).float().mean() / len(loader_test)

        print(f"epoch {epoch}  train loss {float(e_train):.3f} acc {float(a_train):.3f}  "
              f"test loss {float(e_test):.3f} acc {float(a_test):.3f}")


if __name__ == "__main__":
    main()
