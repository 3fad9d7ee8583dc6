# source: https://github.com/ShivamShrirao/diffusers/issues/131
# area: AMP
# bug: a setup helper casts the model to float16; the training loop then uses a GradScaler
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model():
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 2))
    return model.to(device).half()  # expect[h]: TP306


def main():
    use_amp = device.type == "cuda"
    model = build_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for _ in range(3):
        x = torch.randn(5, 6, device=device, dtype=torch.float16)
        with torch.autocast(device_type=device.type, enabled=use_amp):
            loss = model(x).float().logsumexp(1).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)  # expect[h]: any
        scaler.update()


main()
