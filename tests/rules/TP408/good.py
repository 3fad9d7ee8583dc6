import torch


def load_data_parallel_checkpoint(model, path):
    state = torch.load(path, map_location="cpu")
    state = {k.removeprefix("module."): v for k, v in state.items()}
    state = {k[len("module.") :] if k.startswith("module.") else k: v for k, v in state.items()}
    model.load_state_dict(state)


def read_lines(path):
    with open(path) as f:
        return [line.rstrip("\n").rstrip("\r\n").strip(" \t") for line in f]


def tidy(name, chars):
    name = name.lstrip("_").rstrip("0").strip("[]").strip("abc").rstrip("0123456789")
    name = name.lstrip("0x").lstrip("GB").strip(". ").strip()
    return name.strip(chars)


def gpu_memory(text):
    return float(text.rstrip("MiB").strip())


def block_prefix(name):
    return name.strip("BLOCK").lower()
