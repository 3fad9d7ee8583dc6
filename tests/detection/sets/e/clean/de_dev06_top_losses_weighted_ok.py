# twin of: bugs/de_dev06_top_losses_weighted.py
# area: device placement
# correct: the class weights are brought to the device of the gathered CPU predictions before the per-sample loss is computed
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def class_balance_weights(labels, n_cls):
    counts = torch.bincount(labels, minlength=n_cls).float()
    return counts.sum() / (n_cls * counts.clamp(min=1))


class Learner:
    def __init__(self, model, train_dl, valid_dl, loss_func, lr=1e-3):
        self.model = model.to(device)
        self.train_dl, self.valid_dl = train_dl, valid_dl
        self.loss_func = loss_func.to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)

    def fit(self, epochs):
        for _ in range(epochs):
            self.model.train()
            for xb, yb in self.train_dl:
                xb, yb = xb.to(device), yb.to(device)
                loss = self.loss_func(self.model(xb), yb)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()

    @torch.no_grad()
    def get_preds(self):
        self.model.eval()
        outs, tgts = [], []
        for xb, yb in self.valid_dl:
            outs.append(self.model(xb.to(device)))
            tgts.append(yb.to(device))
        return torch.cat(outs).cpu(), torch.cat(tgts).cpu()


class ClassificationInterpretation:
    def __init__(self, preds, targets, losses):
        self.preds, self.targets, self.losses = preds, targets, losses

    @classmethod
    def from_learner(cls, learn):
        preds, targets = learn.get_preds()
        lf = learn.loss_func
        weight = None if lf.weight is None else lf.weight.to(preds.device)
        losses = F.cross_entropy(preds, targets, weight=weight, reduction="none")
        return cls(preds, targets, losses)

    def top_losses(self, k=5):
        return self.losses.topk(k)

    def confusion_matrix(self, n_cls):
        pred_cls = self.preds.argmax(-1)
        idx = self.targets * n_cls + pred_cls
        return torch.bincount(idx, minlength=n_cls * n_cls).view(n_cls, n_cls)


def main():
    torch.manual_seed(0)
    n_cls = 4
    x = torch.randn(512, 20)
    y = torch.multinomial(torch.tensor([0.6, 0.25, 0.1, 0.05]), 512, replacement=True)
    train_ds = TensorDataset(x[:384], y[:384])
    valid_ds = TensorDataset(x[384:], y[384:])
    train_dl = DataLoader(train_ds, batch_size=64, shuffle=True)
    valid_dl = DataLoader(valid_ds, batch_size=64)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, n_cls))
    weights = class_balance_weights(y[:384], n_cls)
    learn = Learner(model, train_dl, valid_dl, nn.CrossEntropyLoss(weight=weights))
    learn.fit(2)
    interp = ClassificationInterpretation.from_learner(learn)
    vals, idx = interp.top_losses(3)
    print("top losses", [round(v, 3) for v in vals.tolist()], idx.tolist())
    print(interp.confusion_matrix(n_cls))


if __name__ == "__main__":
    main()
