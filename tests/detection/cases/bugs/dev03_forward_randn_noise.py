# source: https://github.com/DenOfEquity/webUI_ExtraSchedulers/pull/3
# area: device placement
# bug: the reparameterisation noise is drawn with torch.randn (CPU) instead of randn_like
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(12, 8)
        self.dec = nn.Linear(4, 12)

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=1)
        eps = torch.randn(mu.shape)  # expect[eps]: TP103
        z = mu + eps * torch.exp(0.5 * logvar)  # expect[eps]: TP150
        return self.dec(z), mu, logvar


model = TinyVAE().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.rand(64, 12)
for i in range(0, 64, 16):
    batch = data[i : i + 16].to(device)
    recon, mu, logvar = model(batch)
    kl = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
    loss = nn.functional.mse_loss(recon, batch) + kl
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
