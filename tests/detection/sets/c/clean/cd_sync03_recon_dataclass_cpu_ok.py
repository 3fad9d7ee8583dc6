# twin of: bugs/cd_sync03_recon_dataclass_cpu.py
# area: transfer & sync
# correct: cpu() copies device->host synchronously, so the numpy view is complete when it is read
import dataclasses
import numpy as np
import torch


@dataclasses.dataclass
class TensorContainer:
    def _to(self, device, non_blocking=False):
        changes = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, torch.Tensor):
                changes[field.name] = value.to(device, non_blocking=non_blocking)
        return dataclasses.replace(self, **changes)

    def to(self, device, non_blocking=False):
        return self._to(device, non_blocking=non_blocking)

    def cpu(self):
        return self._to("cpu", non_blocking=False)


@dataclasses.dataclass
class CoilImageData(TensorContainer):
    data: torch.Tensor
    sensitivities: torch.Tensor
    voxel_size_mm: float = 1.0

    def rss(self):
        return self.data.abs().square().sum(dim=0).sqrt()


def simulate_kspace(n_coils, shape, device):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, shape[0]), torch.linspace(-1, 1, shape[1]),
                            indexing="ij")
    phantom = ((xx ** 2 + (yy / 1.3) ** 2) < 0.7).float()
    centers = torch.linspace(-1, 1, n_coils)
    sens = torch.stack([torch.exp(-((xx - c) ** 2 + yy ** 2)) for c in centers]).to(torch.complex64)
    coil_images = sens * phantom
    kspace = torch.fft.fftshift(torch.fft.fft2(torch.fft.ifftshift(coil_images, dim=(-2, -1))),
                                dim=(-2, -1))
    return kspace.to(device), sens.to(device)


def direct_reconstruction(kspace, sens):
    img = torch.fft.fftshift(torch.fft.ifft2(torch.fft.ifftshift(kspace, dim=(-2, -1))),
                             dim=(-2, -1))
    return CoilImageData(data=img, sensitivities=sens)


def export_slices(recon: CoilImageData):
    recon_cpu = recon.cpu()
    volume = recon_cpu.data.numpy()
    rss = np.sqrt((np.abs(volume) ** 2).sum(axis=0))
    zero_rows = int((np.abs(volume).sum(axis=(0, 2)) == 0).sum())
    return rss, zero_rows


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    kspace, sens = simulate_kspace(n_coils=8, shape=(128, 128), device=device)
    recon = direct_reconstruction(kspace, sens)
    rss, zero_rows = export_slices(recon)
    print("rss shape", rss.shape, "max", float(rss.max()), "empty rows", zero_rows)


if __name__ == "__main__":
    main()
