import torch

torch.backends.cuda.matmul.allow_tf32 = True  # for the network
torch.backends.cudnn.allow_tf32 = True


def orthogonal_(weight):
    q, _ = torch.linalg.qr(torch.randn(weight.shape))  # a random matrix: no product in it
    with torch.no_grad():
        weight.copy_(q)


def whiten(features):
    cov = torch.cov(features.double().T)  # float64: TF32 never applies
    return torch.linalg.cholesky(cov)
