# source: https://github.com/lucidrains/vit-pytorch/pull/324
# area: device placement
# bug: only teacher and student are moved to the GPU; the wrapper's own distillation token and head stay on the CPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyViT(nn.Module):
    def __init__(self, image_size=16, patch=4, dim=32, depth=2, heads=4, num_classes=10):
        super().__init__()
        self.dim, self.num_classes = dim, num_classes
        n_patches = (image_size // patch) ** 2
        self.to_patch = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embedding = nn.Parameter(torch.randn(1, n_patches + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, img, distill_token=None):
        x = self.to_patch(img).flatten(2).transpose(1, 2)
        b = x.shape[0]
        x = torch.cat([self.cls_token.expand(b, -1, -1), x], dim=1) + self.pos_embedding
        if distill_token is not None:
            x = torch.cat([x, distill_token.expand(b, -1, -1)], dim=1)
        x = self.encoder(x)
        logits = self.head(x[:, 0])
        if distill_token is not None:
            return logits, x[:, -1]
        return logits


class DistillationWrapper(nn.Module):
    def __init__(self, teacher, student, temperature=3.0, alpha=0.5):
        super().__init__()
        self.teacher, self.student = teacher, student
        self.temperature, self.alpha = temperature, alpha
        self.distillation_token = nn.Parameter(torch.randn(1, 1, student.dim) * 0.02)
        self.distill_head = nn.Sequential(nn.LayerNorm(student.dim), nn.Linear(student.dim, student.num_classes))

    def forward(self, img, labels):
        with torch.no_grad():
            teacher_logits = self.teacher(img)
        student_logits, distill_feat = self.student(img, distill_token=self.distillation_token)
        distill_logits = self.distill_head(distill_feat)
        t = self.temperature
        soft = F.kl_div(F.log_softmax(distill_logits / t, -1), F.softmax(teacher_logits / t, -1), reduction="batchmean")
        hard = F.cross_entropy(student_logits, labels)
        return (1 - self.alpha) * hard + self.alpha * soft * t * t


def build_teacher(num_classes=10):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, num_classes),
    )


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    teacher = build_teacher().to(device).eval()
    student = TinyViT().to(device)
    distiller = DistillationWrapper(teacher=teacher, student=student)  # expect: any
    params = [p for n, p in distiller.named_parameters() if not n.startswith("teacher.")]
    optimizer = torch.optim.AdamW(params, lr=1e-3)

    images = torch.randn(96, 3, 16, 16)
    labels = torch.randint(0, 10, (96,))
    for epoch in range(2):
        distiller.train()
        distiller.teacher.eval()
        epoch_loss = torch.zeros((), device=device)
        for i in range(0, len(images), 32):
            img = images[i:i + 32].to(device)
            lbl = labels[i:i + 32].to(device)
            loss = distiller(img, lbl)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss += loss.detach()
        print(f"epoch {epoch} distill loss {epoch_loss.item() / 3:.4f}")

    student.eval()
    with torch.no_grad():
        acc = (student(images.to(device)).argmax(-1) == labels.to(device)).float().mean()
    print(f"student train acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
