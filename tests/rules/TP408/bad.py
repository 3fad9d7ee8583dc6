import os

import torch


def load_data_parallel_checkpoint(model, path):
    state = torch.load(path, map_location="cpu")
    state = {k.lstrip("module."): v for k, v in state.items()}
    model.load_state_dict(state)


def load_compiled_checkpoint(model, path):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict({k.lstrip("_orig_mod."): v for k, v in state.items()})


def run_name(path):
    return os.path.basename(path).rstrip(".pth")


def backbone_weights(state):
    return {k.strip("backbone."): v for k, v in state.items() if k.startswith("backbone.")}


def strip_wrapper(state):
    prefix = "model."
    return {key.lstrip(prefix): value for key, value in state.items()}


def lightning_to_plain(state):
    return {name.lstrip("model"): tensor for name, tensor in state.items()}
