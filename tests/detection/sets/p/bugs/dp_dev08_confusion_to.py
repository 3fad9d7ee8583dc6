# source: https://github.com/scverse/scvi-tools/issues/431
# area: device placement
# bug: get_discriminator_confusion calls data.to(self.device) without keeping the result, so the encoder on the GPU gets a CPU tensor
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class DomainEncoder(nn.Module):
    def __init__(self, n_genes, n_latent=8, n_domains=2):
        super().__init__()
        self.domain_in = nn.ModuleList(nn.Linear(n_genes, 64) for _ in range(n_domains))
        self.shared = nn.Sequential(nn.ReLU(), nn.Linear(64, n_latent))
        self.decoder = nn.Sequential(nn.Linear(n_latent, 64), nn.ReLU(), nn.Linear(64, n_genes))

    def encode(self, x, mode):
        return self.shared(self.domain_in[mode](torch.log1p(x)))

    def forward(self, x, mode):
        z = self.encode(x, mode)
        return z, self.decoder(z)


class AdversarialIntegrationTrainer:
    def __init__(self, model, discriminator, datasets, device, kappa=1.0, batch_size=64):
        self.model = model.to(device)
        self.discriminator = discriminator.to(device)
        self.datasets = datasets
        self.device = device
        self.kappa = kappa
        self.batch_size = batch_size
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        self.d_opt = torch.optim.Adam(discriminator.parameters(), lr=1e-3)

    def sample_batches(self, rng):
        batches = []
        for data in self.datasets:
            idx = rng.choice(len(data), self.batch_size, replace=False)
            batches.append(torch.from_numpy(data[idx]).to(self.device))
        return batches

    def discriminator_loss(self, latents, true_domain=True):
        losses = []
        n = len(latents)
        for i, z in enumerate(latents):
            target = torch.full((z.shape[0],), i, device=z.device)
            logits = self.discriminator(z)
            if true_domain:
                losses.append(F.cross_entropy(logits, target))
            else:
                uniform = torch.full_like(logits, 1.0 / n)
                losses.append(-(uniform * F.log_softmax(logits, -1)).sum(-1).mean())
        return torch.stack(losses).sum()

    def train(self, n_iter=25, seed=0):
        rng = np.random.default_rng(seed)
        for _ in range(n_iter):
            batches = self.sample_batches(rng)
            outs = [self.model(x, mode=i) for i, x in enumerate(batches)]
            latents = [z for z, _ in outs]
            d_loss = self.kappa * self.discriminator_loss([z.detach() for z in latents], True)
            self.d_opt.zero_grad()
            d_loss.backward()
            self.d_opt.step()
            recon = sum(F.mse_loss(r, torch.log1p(x)) for (_, r), x in zip(outs, batches))
            loss = recon + self.kappa * self.discriminator_loss(latents, False)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    @torch.no_grad()
    def get_discriminator_confusion(self):
        self.model.eval()
        confusion = []
        for i, counts in enumerate(self.datasets):
            data = torch.from_numpy(counts)
            data.to(self.device)  # expect: any
            z = self.model.encode(data, mode=i)
            probs = F.softmax(self.discriminator(z), dim=1)
            confusion.append(probs.mean(dim=0))
        self.model.train()
        return torch.stack(confusion).cpu().numpy()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    n_genes = 50
    datasets = [rng.poisson(lam, size=(300, n_genes)).astype(np.float32) for lam in (2.0, 5.0)]
    trainer = AdversarialIntegrationTrainer(DomainEncoder(n_genes), nn.Linear(8, 2), datasets, device)
    trainer.train()
    print("discriminator confusion (uniform = well mixed):")
    print(np.round(trainer.get_discriminator_confusion(), 3))
