# source: https://github.com/mazzzystar/randomCNN-voice-transfer/issues/16
# area: device placement
# bug: the spectrogram being optimised is made a leaf with requires_grad on the CPU and only then moved with .to(device); on a GPU the result is a non-leaf copy, so Adam rejects it ("can't optimize a non-leaf Tensor")
import torch
import torch.nn as nn
import torch.nn.functional as F


class RandomCNN(nn.Module):
    def __init__(self, n_freq, n_filters=64, kernel_width=11):
        super().__init__()
        self.conv = nn.Conv2d(1, n_filters, kernel_size=(n_freq, kernel_width), stride=1,
                              padding=(0, kernel_width // 2))
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, spec):
        return F.leaky_relu(self.conv(spec.unsqueeze(1)), 0.2)


def gram_matrix(features):
    b, c, h, w = features.shape
    flat = features.reshape(b, c, h * w)
    return flat @ flat.transpose(1, 2) / (h * w)


def synth_spectrogram(n_freq, n_frames, base_freq, device):
    t = torch.linspace(0, 1, n_frames, device=device)
    f = torch.arange(n_freq, device=device).unsqueeze(1).float()
    partials = torch.exp(-((f - base_freq * (1 + 0.2 * torch.sin(6.28 * t))) ** 2) / 8.0)
    partials = partials + 0.5 * torch.exp(-((f - 2 * base_freq) ** 2) / 12.0)
    return torch.log1p(partials + 0.01 * torch.rand(n_freq, n_frames, device=device)).unsqueeze(0)


class StyleTransfer:
    def __init__(self, cnn, content, style, style_weight=1.0, content_weight=0.1):
        self.cnn = cnn
        self.content_target = cnn(content).detach()
        self.style_target = gram_matrix(cnn(style)).detach()
        self.style_weight = style_weight
        self.content_weight = content_weight

    def loss(self, generated):
        feats = self.cnn(generated)
        content_loss = F.mse_loss(feats, self.content_target)
        style_loss = F.mse_loss(gram_matrix(feats), self.style_target)
        return self.content_weight * content_loss + self.style_weight * style_loss

    def run(self, shape, device, steps=40, lr=0.03, log_every=20):
        generated = (torch.randn(shape) * 1e-3).requires_grad_(True).to(device)  # expect: any
        optimizer = torch.optim.Adam([generated], lr=lr)
        history = []
        for step in range(steps):
            optimizer.zero_grad()
            loss = self.loss(generated)
            loss.backward()
            optimizer.step()
            if step % log_every == 0:
                history.append(loss.detach())
        for i, value in enumerate(torch.stack(history).tolist()):
            print(f"step {i * log_every}: loss {value:.5f}")
        return generated.detach()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n_freq, n_frames = 64, 96
    content = synth_spectrogram(n_freq, n_frames, base_freq=12.0, device=device)
    style = synth_spectrogram(n_freq, n_frames, base_freq=25.0, device=device)
    cnn = RandomCNN(n_freq).to(device).eval()
    transfer = StyleTransfer(cnn, content, style)
    result = transfer.run(content.shape, device)
    print("output spectrogram", tuple(result.shape), "mean", round(result.mean().item(), 4))


if __name__ == "__main__":
    main()
