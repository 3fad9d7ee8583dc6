# source: https://github.com/daniilidis-group/neural_renderer/pull/52
# area: device placement
# bug: look_at() calls up.to(device) without assigning the result, so the up vector stays on the CPU and torch.cross mixes it with GPU tensors
import math

import torch
import torch.nn.functional as F


def look_at(vertices, eye, at=(0.0, 0.0, 0.0), up=(0.0, 1.0, 0.0)):
    """Transform world-space vertices [B, N, 3] into the camera frame of `eye` [B, 3]."""
    device = vertices.device
    batch_size = vertices.shape[0]

    if not torch.is_tensor(at):
        at = torch.tensor(at, dtype=torch.float32, device=device)
    if not torch.is_tensor(up):
        up = torch.tensor(up, dtype=torch.float32)
    up.to(device)  # expect: any
    if at.ndim == 1:
        at = at[None, :].expand(batch_size, 3)
    if up.ndim == 1:
        up = up[None, :].expand(batch_size, 3)

    z_axis = F.normalize(at - eye, eps=1e-5, dim=1)
    x_axis = F.normalize(torch.cross(up, z_axis, dim=1), eps=1e-5, dim=1)
    y_axis = F.normalize(torch.cross(z_axis, x_axis, dim=1), eps=1e-5, dim=1)
    rot = torch.stack((x_axis, y_axis, z_axis), dim=1)
    return torch.matmul(vertices - eye[:, None, :], rot.transpose(1, 2))


def perspective(vertices, fov_deg=30.0):
    width = math.tan(math.radians(fov_deg))
    z = vertices[..., 2].clamp(min=1e-3)
    return torch.stack((vertices[..., 0] / (z * width), vertices[..., 1] / (z * width)), dim=-1)


def eye_from_spherical(distance, elevation, azimuth):
    el, az = torch.deg2rad(elevation), torch.deg2rad(azimuth)
    return torch.stack(
        (distance * torch.cos(el) * torch.sin(az), distance * torch.sin(el), -distance * torch.cos(el) * torch.cos(az)),
        dim=-1,
    )


def make_cube(device):
    corners = torch.tensor(
        [[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)], device=device
    )
    return corners[None] * 0.5


def fit_camera(device, steps=40):
    verts = make_cube(device)
    with torch.no_grad():
        true_eye = eye_from_spherical(
            torch.tensor([3.0], device=device), torch.tensor([25.0], device=device), torch.tensor([40.0], device=device)
        )
        target_2d = perspective(look_at(verts, true_eye))

    elevation = torch.tensor([10.0], device=device, requires_grad=True)
    azimuth = torch.tensor([10.0], device=device, requires_grad=True)
    distance = torch.tensor([3.0], device=device)
    opt = torch.optim.Adam([elevation, azimuth], lr=1.0)
    for _ in range(steps):
        eye = eye_from_spherical(distance, elevation, azimuth)
        loss = (perspective(look_at(verts, eye)) - target_2d).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return elevation.detach(), azimuth.detach(), loss.detach()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    el, az, loss = fit_camera(device)
    print(f"elevation={el.item():.2f} azimuth={az.item():.2f} reprojection={loss.item():.5f}")
