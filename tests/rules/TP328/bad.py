import torch

torch.backends.cuda.matmul.allow_tf32 = True


def kabsch(src, dst):
    h = (src - src.mean(0)).T @ (dst - dst.mean(0))
    u, _, vt = torch.linalg.svd(h)
    return vt.T @ u.T


def solve_pose(a, b):
    torch.set_float32_matmul_precision("high")
    return torch.linalg.solve(a.T @ a, a.T @ b)
