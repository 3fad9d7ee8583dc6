# source: https://github.com/kornia/kornia/issues/4224
# area: dtype
# bug: the descriptor is L2-normalised with eps=1e-10, which rounds to 0 in float16; blank patches give 0/0 = NaN descriptors when the model runs in half on GPU
import torch
import torch.nn as nn


class PatchDescriptor(nn.Module):
    """HardNet-style descriptor for 32x32 grayscale patches."""

    def __init__(self, dim=64, eps=1e-10):
        super().__init__()
        self.eps = eps

        def block(cin, cout, stride):
            return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                    nn.BatchNorm2d(cout, affine=False), nn.ReLU()]

        self.features = nn.Sequential(
            *block(1, 16, 1), *block(16, 32, 2), *block(32, 64, 2),
            nn.Conv2d(64, dim, 8, bias=False), nn.BatchNorm2d(dim, affine=False),
        )

    def forward(self, patches):
        desc = self.features(patches).flatten(1)
        norm = desc.norm(dim=1, keepdim=True)
        return desc / (norm + self.eps)  # expect: any


def normalize_patches(patches):
    mean = patches.mean(dim=(2, 3), keepdim=True)
    std = patches.std(dim=(2, 3), keepdim=True)
    return (patches - mean) / std.clamp(min=1e-3)


def make_patch_pairs(n, gen):
    base = torch.rand(n, 1, 32, 32, generator=gen)
    warped = (base + 0.05 * torch.randn(n, 1, 32, 32, generator=gen)).clamp(0, 1)
    flat = torch.full((4, 1, 32, 32), 0.5)
    return torch.cat([base, flat]), torch.cat([warped, flat])


@torch.no_grad()
def mutual_nn_matches(desc_a, desc_b):
    dist = torch.cdist(desc_a.float(), desc_b.float())
    ab = dist.argmin(dim=1)
    ba = dist.argmin(dim=0)
    idx = torch.arange(desc_a.size(0), device=desc_a.device)
    mutual = ba[ab] == idx
    return idx[mutual], ab[mutual]


class MatchingPipeline:
    def __init__(self, device):
        self.device = device
        self.dtype = torch.float16 if device.type == "cuda" else torch.float32
        torch.manual_seed(0)
        self.model = PatchDescriptor().to(self.device, self.dtype).eval()

    @torch.no_grad()
    def describe(self, patches):
        patches = normalize_patches(patches).to(self.device, self.dtype)
        return self.model(patches)

    def run(self, n=60):
        gen = torch.Generator().manual_seed(1)
        left, right = make_patch_pairs(n, gen)
        da, db = self.describe(left), self.describe(right)
        qi, ti = mutual_nn_matches(da, db)
        correct = (qi == ti).sum()
        bad_desc = torch.isnan(da).any(dim=1).sum()
        return qi.numel(), correct.item(), bad_desc.item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pipe = MatchingPipeline(device)
    n_matches, n_correct, n_nan = pipe.run()
    print(f"matches: {n_matches}  correct: {n_correct}  nan descriptors: {n_nan}")


if __name__ == "__main__":
    main()
