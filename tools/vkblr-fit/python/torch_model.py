"""A PyTorch model and its calibration batches, for the command lines of
dump_calibration.py and load_blr.py.

    load_model("file.py:make")           a factory in a Python file, called with no arguments
    load_model("package.module:make")    the same from an importable module
    load_model("model.pt")               a torch.save'd nn.Module (unpickled: trust the file;
                                         the classes it names must be importable)
    load_batches("inputs.pt", rows)      a torch.save'd tensor, or a list of batches (tensors,
                                         tuples of positional arguments, dicts of keyword
                                         arguments), or a .npy array; a tensor is cut into
                                         batches of `rows` along its first dimension
    run_model(model, batch)              model(batch), model(*batch) or model(**batch), without
                                         gradients; the output as a tensor (a tuple's first item,
                                         a Hugging Face output's logits)

Every failure raises ValueError with a message that names the file or spec.
"""
from __future__ import annotations

import importlib
import importlib.util
import os

import numpy as np
import torch


def load_model(spec: str) -> torch.nn.Module:
    if os.path.isfile(spec):
        model = torch.load(spec, map_location="cpu", weights_only=False)
    else:
        source, _, factory = spec.rpartition(":")
        if not source or not factory:
            raise ValueError(f"model '{spec}': neither a file nor MODULE:FACTORY")
        if source.endswith(".py"):
            if not os.path.isfile(source):
                raise ValueError(f"model '{spec}': {source} does not exist")
            module_spec = importlib.util.spec_from_file_location(os.path.basename(source)[:-3], source)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(source)
        if not callable(getattr(module, factory, None)):
            raise ValueError(f"model '{spec}': {source} has no function '{factory}'")
        model = getattr(module, factory)()
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model '{spec}' is a {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def load_batches(path: str, rows: int | None = None) -> list:
    if path.endswith(".npy"):
        data = torch.from_numpy(np.load(path, allow_pickle=False))
    elif path.endswith(".pt"):
        data = torch.load(path, map_location="cpu", weights_only=True)
    else:
        raise ValueError(f"inputs {path}: want a .pt (torch.save) or .npy file")
    if isinstance(data, torch.Tensor):
        return list(torch.split(data, rows)) if rows else [data]
    if isinstance(data, (list, tuple)) and data:
        return list(data)
    raise ValueError(f"inputs {path}: a {type(data).__name__}; want a tensor or a non-empty list of batches")


def run_model(model: torch.nn.Module, batch) -> torch.Tensor:
    with torch.no_grad():
        if isinstance(batch, dict):
            out = model(**batch)
        elif isinstance(batch, (tuple, list)):
            out = model(*batch)
        else:
            out = model(batch)
    if hasattr(out, "logits"):
        out = out.logits
    if isinstance(out, (tuple, list)):
        out = out[0]
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"the model returned a {type(out).__name__}, not a tensor")
    return out
