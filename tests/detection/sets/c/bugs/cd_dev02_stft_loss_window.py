# source: https://github.com/mozilla/TTS/issues/619
# area: device placement
# bug: the STFT helper is a plain class, so its window tensor is not moved by criterion.to(device) and torch.stft gets a CUDA signal with a CPU window
import torch
import torch.nn as nn
import torch.nn.functional as F


class TorchSTFT:
    def __init__(self, n_fft, hop_length, win_length, window="hann_window"):
        self.n_fft = n_fft
        self.hop_length = hop_length
        self.win_length = win_length
        self.window = getattr(torch, window)(win_length)  # expect[w]: any

    def __call__(self, x):
        spec = torch.stft(x, self.n_fft, self.hop_length, self.win_length, self.window,  # expect[w]: any
                          center=True, pad_mode="reflect", normalized=False,
                          onesided=True, return_complex=True)
        return torch.clamp(spec.abs() ** 2, min=1e-8).sqrt()


class STFTLoss(nn.Module):
    def __init__(self, n_fft, hop_length, win_length):
        super().__init__()
        self.stft = TorchSTFT(n_fft, hop_length, win_length)

    def forward(self, y_hat, y):
        y_hat_m = self.stft(y_hat)
        y_m = self.stft(y)
        loss_mag = F.l1_loss(torch.log(y_m), torch.log(y_hat_m))
        loss_sc = torch.norm(y_m - y_hat_m, p="fro") / torch.norm(y_m, p="fro")
        return loss_mag, loss_sc


class MultiScaleSTFTLoss(nn.Module):
    def __init__(self, n_ffts=(1024, 512, 256), hop_lengths=(120, 60, 30), win_lengths=(600, 300, 120)):
        super().__init__()
        self.loss_funcs = nn.ModuleList(
            STFTLoss(n, h, w) for n, h, w in zip(n_ffts, hop_lengths, win_lengths))

    def forward(self, y_hat, y):
        total_mag, total_sc = 0.0, 0.0
        for f in self.loss_funcs:
            lm, lsc = f(y_hat, y)
            total_mag = total_mag + lm
            total_sc = total_sc + lsc
        n = len(self.loss_funcs)
        return total_mag / n, total_sc / n


class TinyVocoder(nn.Module):
    def __init__(self, n_mels=20, hidden=32, upsample=64):
        super().__init__()
        self.pre = nn.Conv1d(n_mels, hidden, 3, padding=1)
        self.up = nn.ConvTranspose1d(hidden, hidden, upsample * 2, stride=upsample, padding=upsample // 2)
        self.post = nn.Conv1d(hidden, 1, 7, padding=3)

    def forward(self, mel):
        h = F.leaky_relu(self.pre(mel), 0.2)
        h = F.leaky_relu(self.up(h), 0.2)
        return torch.tanh(self.post(h)).squeeze(1)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model_gen = TinyVocoder().to(device)
    criterion_gen = MultiScaleSTFTLoss().to(device)
    optimizer_gen = torch.optim.Adam(model_gen.parameters(), lr=1e-4, betas=(0.8, 0.99))

    mels = torch.randn(16, 20, 64)
    wavs = torch.tanh(torch.randn(16, 64 * 64))
    dataset = torch.utils.data.TensorDataset(mels, wavs)
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=True, drop_last=True)

    model_gen.train()
    epoch_loss = torch.zeros((), device=device)
    for mel, wav in loader:
        mel, wav = mel.to(device), wav.to(device)
        y_hat = model_gen(mel)
        loss_mag, loss_sc = criterion_gen(y_hat, wav)
        loss = loss_mag + loss_sc
        optimizer_gen.zero_grad()
        loss.backward()
        optimizer_gen.step()
        epoch_loss += loss.detach()
    print("generator loss", (epoch_loss / len(loader)).item())


if __name__ == "__main__":
    main()
