# source: https://github.com/k2-fsa/icefall/pull/1821
# area: AMP
# bug: the TTS recipe still uses the deprecated torch.cuda.amp.autocast / torch.cuda.amp.GradScaler entry points instead of torch.amp.autocast("cuda") / torch.amp.GradScaler("cuda")
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttributeDict(dict):
    def __getattr__(self, key):
        return self[key]

    def __setattr__(self, key, value):
        self[key] = value


def get_params():
    return AttributeDict(
        num_tokens=40, embed_dim=48, n_mels=20, max_frames=60,
        batch_size=6, num_epochs=2, batches_per_epoch=4,
        lr=2e-3, use_fp16=True, log_interval=4,
    )


class DurationTTS(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.embed = nn.Embedding(p.num_tokens, p.embed_dim)
        self.encoder = nn.GRU(p.embed_dim, p.embed_dim, batch_first=True, bidirectional=True)
        self.duration = nn.Linear(2 * p.embed_dim, 1)
        self.decoder = nn.Sequential(nn.Linear(2 * p.embed_dim, 128), nn.ReLU(), nn.Linear(128, p.n_mels))

    def forward(self, tokens, durations, mel_len):
        h, _ = self.encoder(self.embed(tokens))
        log_dur = self.duration(h).squeeze(-1)
        expanded = torch.repeat_interleave(h.flatten(0, 1), durations.flatten(), dim=0, output_size=mel_len)
        return log_dur, self.decoder(expanded)


def synth_batch(p, g):
    tokens = torch.randint(0, p.num_tokens, (p.batch_size, 10), generator=g)
    durations = torch.randint(1, 4, (p.batch_size, 10), generator=g)
    mel_len = int(durations.sum())
    mels = torch.randn(mel_len, p.n_mels, generator=g)
    return tokens, durations, mels, mel_len


def train_one_epoch(params, model, optimizer, scaler, batches, device):
    model.train()
    tot = torch.zeros((), device=device)
    for batch_idx, (tokens, durations, mels, mel_len) in enumerate(batches):
        tokens, durations, mels = tokens.to(device), durations.to(device), mels.to(device)
        with torch.cuda.amp.autocast(enabled=params.use_fp16):  # expect[w]: any
            log_dur, mel_hat = model(tokens, durations, mel_len)
            dur_loss = F.mse_loss(log_dur.float(), torch.log(durations.float()))
            mel_loss = F.l1_loss(mel_hat.float(), mels)
            loss = dur_loss + mel_loss
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        tot += loss.detach()
    return tot / len(batches)


def run():
    params = get_params()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    params.use_fp16 = params.use_fp16 and device.type == "cuda"
    torch.manual_seed(0)
    model = DurationTTS(params).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=params.lr)
    scaler = torch.cuda.amp.GradScaler(enabled=params.use_fp16, init_scale=1.0)  # expect[w]: any
    g = torch.Generator().manual_seed(0)
    batches = [synth_batch(params, g) for _ in range(params.batches_per_epoch)]
    epoch_losses = [train_one_epoch(params, model, optimizer, scaler, batches, device)
                    for _ in range(params.num_epochs)]
    print("epoch losses:", [round(v, 4) for v in torch.stack(epoch_losses).cpu().tolist()])


if __name__ == "__main__":
    run()
