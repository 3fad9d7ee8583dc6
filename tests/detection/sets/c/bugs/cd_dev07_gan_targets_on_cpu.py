# source: https://github.com/Lightning-Universe/lightning-bolts/issues/30
# area: device placement
# bug: the real/fake target tensors for binary_cross_entropy are created with torch.ones/torch.zeros on the CPU inside the loss helpers, while the discriminator output is on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class Generator(nn.Module):
    def __init__(self, latent_dim, img_shape, hidden_dim=128):
        super().__init__()
        self.img_shape = img_shape
        feats = int(torch.tensor(img_shape).prod())
        self.net = nn.Sequential(
            nn.Linear(latent_dim, hidden_dim), nn.LeakyReLU(0.2),
            nn.Linear(hidden_dim, hidden_dim * 2), nn.LeakyReLU(0.2),
            nn.Linear(hidden_dim * 2, feats), nn.Tanh(),
        )

    def forward(self, z):
        return self.net(z).view(z.size(0), *self.img_shape)


class Discriminator(nn.Module):
    def __init__(self, img_shape, hidden_dim=128):
        super().__init__()
        feats = int(torch.tensor(img_shape).prod())
        self.net = nn.Sequential(
            nn.Linear(feats, hidden_dim * 2), nn.LeakyReLU(0.2), nn.Dropout(0.3),
            nn.Linear(hidden_dim * 2, hidden_dim), nn.LeakyReLU(0.2), nn.Dropout(0.3),
            nn.Linear(hidden_dim, 1), nn.Sigmoid(),
        )

    def forward(self, img):
        return self.net(img.flatten(1))


class BasicGAN:
    def __init__(self, img_shape, latent_dim=32, lr=2e-4, device="cpu"):
        self.device = device
        self.latent_dim = latent_dim
        self.generator = Generator(latent_dim, img_shape).to(device)
        self.discriminator = Discriminator(img_shape).to(device)
        self.opt_g = torch.optim.Adam(self.generator.parameters(), lr=lr, betas=(0.5, 0.999))
        self.opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(0.5, 0.999))

    def sample_z(self, n):
        return torch.randn(n, self.latent_dim, device=self.device)

    def generator_loss(self, x):
        z = self.sample_z(x.size(0))
        y = torch.ones(x.size(0), 1)  # expect[w]: any
        d_output = self.discriminator(self.generator(z))
        return F.binary_cross_entropy(d_output, y)

    def discriminator_loss(self, x):
        b = x.size(0)
        real = torch.ones(b, 1)  # expect[w]: any
        fake = torch.zeros(b, 1)  # expect[w]: any
        real_loss = F.binary_cross_entropy(self.discriminator(x), real)
        generated = self.generator(self.sample_z(b)).detach()
        fake_loss = F.binary_cross_entropy(self.discriminator(generated), fake)
        return real_loss + fake_loss

    def training_step(self, x):
        self.opt_g.zero_grad()
        g_loss = self.generator_loss(x)
        g_loss.backward()
        self.opt_g.step()

        self.opt_d.zero_grad()
        d_loss = self.discriminator_loss(x)
        d_loss.backward()
        self.opt_d.step()
        return g_loss.detach(), d_loss.detach()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    img_shape = (1, 14, 14)
    data = torch.rand(128, *img_shape) * 2 - 1
    loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True, drop_last=True)
    gan = BasicGAN(img_shape, device=device)
    for epoch in range(2):
        g_sum = torch.zeros((), device=device)
        d_sum = torch.zeros((), device=device)
        for x in loader:
            g, d = gan.training_step(x.to(device))
            g_sum += g
            d_sum += d
        print(f"epoch {epoch}: g_loss {g_sum.item() / len(loader):.3f} d_loss {d_sum.item() / len(loader):.3f}")


if __name__ == "__main__":
    main()
