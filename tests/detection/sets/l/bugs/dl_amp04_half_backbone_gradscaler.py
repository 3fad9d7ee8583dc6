# source: https://github.com/Facico/Chinese-Vicuna/issues/168
# area: AMP
# bug: on a GPU the whole trainable model is loaded as float16 and then trained with GradScaler, whose unscale_ refuses fp16 gradients ("Attempting to unscale FP16 gradients")
import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

CONFIG = {
    "vocab_size": 1000, "hidden": 128, "layers": 2, "heads": 4, "num_labels": 3,
    "seq_len": 16, "batch_size": 8, "epochs": 2, "lr": 2e-5, "fp16": True, "max_grad_norm": 1.0,
}


class TextEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg["vocab_size"], cfg["hidden"])
        block = nn.TransformerEncoderLayer(cfg["hidden"], cfg["heads"], 4 * cfg["hidden"], batch_first=True)
        self.encoder = nn.TransformerEncoder(block, cfg["layers"], enable_nested_tensor=False)
        self.classifier = nn.Linear(cfg["hidden"], cfg["num_labels"])

    def forward(self, input_ids):
        h = self.encoder(self.embed(input_ids))
        return self.classifier(h.mean(dim=1))


def save_pretrained(path, cfg):
    torch.save(TextEncoder(cfg).state_dict(), path)


def load_backbone(path, cfg):
    model = TextEncoder(cfg)
    model.load_state_dict(torch.load(path, map_location="cpu"))
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    return model.to(device=device, dtype=dtype)  # expect[h]: any


def fake_dataset(cfg, n_batches=4):
    for _ in range(n_batches):
        ids = torch.randint(0, cfg["vocab_size"], (cfg["batch_size"], cfg["seq_len"]))
        labels = torch.randint(0, cfg["num_labels"], (cfg["batch_size"],))
        yield ids, labels


def finetune(model, cfg):
    use_amp = cfg["fp16"] and device.type == "cuda"
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], eps=1e-6)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)  # expect[h]: any
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for epoch in range(cfg["epochs"]):
        total, n_batches = torch.zeros((), device=device), 0
        for ids, labels in fake_dataset(cfg):
            ids, labels = ids.to(device), labels.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                loss = loss_fn(model(ids), labels)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), cfg["max_grad_norm"])
            scaler.step(optimizer)
            scaler.update()
            total += loss.detach().float()
            n_batches += 1
        print(f"epoch {epoch}: loss {total.item() / n_batches:.4f}")
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "backbone.pt")
        save_pretrained(ckpt, CONFIG)
        model = load_backbone(ckpt, CONFIG)
        finetune(model, CONFIG)
