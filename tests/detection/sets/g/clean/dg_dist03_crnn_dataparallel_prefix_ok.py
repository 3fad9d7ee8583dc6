# twin of: bugs/dg_dist03_crnn_dataparallel_prefix.py
# area: porting & distributed
# correct: the trainer saves the unwrapped module's state_dict, so the checkpoint keys match a bare CRNN whether or not DataParallel was used
import os
import tempfile

import torch
import torch.nn as nn

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


class CRNN(nn.Module):
    def __init__(self, num_classes, hidden=64):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d((2, 1)),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((1, None)),
        )
        self.rnn = nn.LSTM(64, hidden, bidirectional=True, batch_first=False)
        self.fc = nn.Linear(2 * hidden, num_classes)

    def forward(self, images):
        feats = self.cnn(images).squeeze(2).permute(2, 0, 1)  # (T, B, C)
        out, _ = self.rnn(feats)
        return self.fc(out).log_softmax(-1)


def synthetic_batch(batch_size, device, label_len=5):
    images = torch.randn(batch_size, 1, 32, 64, device=device)
    targets = torch.randint(1, len(ALPHABET) + 1, (batch_size, label_len), device=device)
    return images, targets


def train(opt, device):
    crnn = CRNN(len(ALPHABET) + 1)
    if torch.cuda.is_available():
        crnn = crnn.to(device)
        crnn = nn.DataParallel(crnn, device_ids=list(range(torch.cuda.device_count())))
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)
    optimizer = torch.optim.Adam(crnn.parameters(), lr=opt["lr"])
    crnn.train()
    for _ in range(opt["iters"]):
        images, targets = synthetic_batch(opt["batch_size"], device)
        log_probs = crnn(images)
        input_lengths = torch.full((images.size(0),), log_probs.size(0), dtype=torch.long)
        target_lengths = torch.full((images.size(0),), targets.size(1), dtype=torch.long)
        loss = criterion(log_probs, targets, input_lengths, target_lengths)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    path = os.path.join(opt["expr_dir"], "netCRNN_final.pth")
    to_save = crnn.module if isinstance(crnn, nn.DataParallel) else crnn
    torch.save(to_save.state_dict(), path)
    return path


def greedy_decode(log_probs):
    best = log_probs.argmax(-1).transpose(0, 1).cpu()
    texts = []
    for seq in best.tolist():
        chars, prev = [], 0
        for idx in seq:
            if idx != 0 and idx != prev:
                chars.append(ALPHABET[idx - 1])
            prev = idx
        texts.append("".join(chars))
    return texts


def demo(model_path, device):
    crnn = CRNN(len(ALPHABET) + 1).to(device)
    crnn.load_state_dict(torch.load(model_path, map_location=device))
    crnn.eval()
    images, _ = synthetic_batch(4, device)
    with torch.no_grad():
        preds = crnn(images)
    return greedy_decode(preds)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as expr_dir:
        opt = {"lr": 1e-3, "iters": 5, "batch_size": 8, "expr_dir": expr_dir}
        path = train(opt, device)
        print("predictions:", demo(path, device))


if __name__ == "__main__":
    main()
