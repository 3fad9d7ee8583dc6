# source: https://github.com/huggingface/setfit/issues/339
# area: device placement
# bug: the trainer hands the differentiable head's predictions to compute_metrics as a CUDA tensor, and the metric calls .numpy() on it
import numpy as np
import torch
import torch.nn as nn


def compute_metrics(predictions, labels):
    predictions = predictions.numpy()  # expect: any
    tp = np.logical_and(predictions == 1, labels == 1).sum()
    fp = np.logical_and(predictions == 1, labels == 0).sum()
    fn = np.logical_and(predictions == 0, labels == 1).sum()
    precision = tp / max(tp + fp, 1)
    recall = tp / max(tp + fn, 1)
    f1 = 2 * precision * recall / max(precision + recall, 1e-12)
    exact = (predictions == labels).all(axis=1).mean()
    return {"f1_micro": float(f1), "exact_match": float(exact)}


class SentenceEncoder(nn.Module):
    def __init__(self, vocab_size=500, dim=64):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        self.proj = nn.Linear(dim, dim)

    def forward(self, token_ids):
        return torch.tanh(self.proj(self.embed(token_ids)))


class DifferentiableHead(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, features):
        return self.linear(features)


class FewShotModel(nn.Module):
    def __init__(self, num_labels):
        super().__init__()
        self.body = SentenceEncoder()
        self.head = DifferentiableHead(64, num_labels)

    def forward(self, token_ids):
        return self.head(self.body(token_ids))

    @torch.no_grad()
    def predict(self, token_ids, threshold=0.5):
        return (torch.sigmoid(self(token_ids)) > threshold).long()


class Trainer:
    def __init__(self, model, train_data, eval_data, metric, device, batch_size=16):
        self.device = device
        self.model = model.to(device)
        self.train_data = train_data
        self.eval_data = eval_data
        self.metric = metric
        self.batch_size = batch_size

    def train(self, num_epochs=3, lr=1e-2):
        x, y = self.train_data
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                             batch_size=self.batch_size, shuffle=True)
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        loss_fn = nn.BCEWithLogitsLoss()
        self.model.train()
        for _ in range(num_epochs):
            for tokens, labels in loader:
                tokens, labels = tokens.to(self.device), labels.to(self.device)
                loss = loss_fn(self.model(tokens), labels.float())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

    def evaluate(self):
        x_test, y_test = self.eval_data
        self.model.eval()
        y_pred = self.model.predict(x_test.to(self.device))
        return self.metric(y_pred, y_test.numpy())


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    num_labels = 5
    tokens = torch.randint(0, 500, (160, 12))
    labels = (torch.rand(160, num_labels) > 0.6).long()
    trainer = Trainer(FewShotModel(num_labels), (tokens[:128], labels[:128]),
                      (tokens[128:], labels[128:]), compute_metrics, device)
    trainer.train()
    print(trainer.evaluate())


if __name__ == "__main__":
    main()
