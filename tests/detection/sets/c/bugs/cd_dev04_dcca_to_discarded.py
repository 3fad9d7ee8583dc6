# source: https://github.com/Michaelvll/DeepCCA/issues/17
# area: device placement
# bug: x1.to(device) / x2.to(device) return new tensors that are thrown away, so the batches stay on the CPU while both towers are on the GPU
import torch
import torch.nn as nn


class MlpNet(nn.Module):
    def __init__(self, layer_sizes, input_size):
        super().__init__()
        layers = []
        sizes = [input_size] + list(layer_sizes)
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i < len(sizes) - 2:
                layers.append(nn.Sigmoid())
                layers.append(nn.BatchNorm1d(sizes[i + 1], affine=False))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class DeepCCA(nn.Module):
    def __init__(self, layer_sizes1, layer_sizes2, input_size1, input_size2):
        super().__init__()
        self.model1 = MlpNet(layer_sizes1, input_size1)
        self.model2 = MlpNet(layer_sizes2, input_size2)

    def forward(self, x1, x2):
        return self.model1(x1), self.model2(x2)


class CCALoss:
    def __init__(self, outdim_size, r1=1e-3, r2=1e-3, eps=1e-9):
        self.outdim_size = outdim_size
        self.r1, self.r2, self.eps = r1, r2, eps

    def __call__(self, H1, H2):
        H1, H2 = H1.t(), H2.t()
        m = H1.size(1)
        H1bar = H1 - H1.mean(dim=1, keepdim=True)
        H2bar = H2 - H2.mean(dim=1, keepdim=True)
        eye1 = torch.eye(H1.size(0), device=H1.device, dtype=H1.dtype)
        eye2 = torch.eye(H2.size(0), device=H2.device, dtype=H2.dtype)
        s12 = H1bar @ H2bar.t() / (m - 1)
        s11 = H1bar @ H1bar.t() / (m - 1) + self.r1 * eye1
        s22 = H2bar @ H2bar.t() / (m - 1) + self.r2 * eye2
        d1, v1 = torch.linalg.eigh(s11)
        d2, v2 = torch.linalg.eigh(s22)
        s11_inv_root = v1 @ torch.diag(d1.clamp_min(self.eps) ** -0.5) @ v1.t()
        s22_inv_root = v2 @ torch.diag(d2.clamp_min(self.eps) ** -0.5) @ v2.t()
        t_val = s11_inv_root @ s12 @ s22_inv_root
        corr = torch.linalg.svdvals(t_val)[: self.outdim_size].sum()
        return -corr


class Solver:
    def __init__(self, model, outdim_size, epoch_num, batch_size, learning_rate, device):
        self.model = model.to(device)
        self.loss = CCALoss(outdim_size)
        self.optimizer = torch.optim.RMSprop(self.model.parameters(), lr=learning_rate, weight_decay=1e-5)
        self.epoch_num = epoch_num
        self.batch_size = batch_size
        self.device = device

    def fit(self, x1, x2):
        data_size = x1.size(0)
        for epoch in range(self.epoch_num):
            self.model.train()
            batch_idxs = torch.randperm(data_size).split(self.batch_size)
            epoch_loss = torch.zeros((), device=self.device)
            for batch_idx in batch_idxs:
                self.optimizer.zero_grad()
                batch_x1 = x1[batch_idx, :]
                batch_x2 = x2[batch_idx, :]
                batch_x1.to(self.device)  # expect[w]: any
                batch_x2.to(self.device)  # expect[w]: any
                o1, o2 = self.model(batch_x1, batch_x2)
                loss = self.loss(o1, o2)
                epoch_loss += loss.detach()
                loss.backward()
                self.optimizer.step()
            print(f"epoch {epoch + 1}: loss {epoch_loss.item() / len(batch_idxs):.4f}")


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    latent = torch.randn(512, 4)
    x1 = torch.cat([latent, torch.randn(512, 12)], dim=1) @ torch.randn(16, 16)
    x2 = torch.cat([latent, torch.randn(512, 8)], dim=1) @ torch.randn(12, 12)
    outdim_size = 4
    model = DeepCCA([32, 32, outdim_size], [32, 32, outdim_size], x1.size(1), x2.size(1))
    solver = Solver(model, outdim_size, epoch_num=3, batch_size=128, learning_rate=1e-3, device=device)
    solver.fit(x1, x2)


if __name__ == "__main__":
    main()
