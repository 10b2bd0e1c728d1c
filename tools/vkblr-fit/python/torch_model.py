"""A PyTorch model and its calibration batches, for the command lines of
dump_calibration.py and load_blr.py.

    load_model("file.py:make")           a factory in a Python file, called with no arguments
    load_model("package.module:make")    the same from an importable module
    load_model("model.pt")               a torch.save'd nn.Module (unpickled: trust the file;
                                         the classes it names must be importable)
    load_batches("inputs.pt", rows)      a torch.save'd tensor, or a list of batches (tensors,
                                         tuples of positional arguments, dicts of keyword
                                         arguments), or a .npy array, or what a factory
                                         ("file.py:make_inputs") returns; a tensor is cut
                                         into batches of `rows` along its first dimension
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


def call_factory(spec: str, what: str):
    """factory() of "file.py:factory" or "package.module:factory"."""
    source, _, factory = spec.rpartition(":")
    if not source or not factory:
        raise ValueError(f"{what} '{spec}': neither a file nor MODULE:FACTORY")
    if source.endswith(".py"):
        if not os.path.isfile(source):
            raise ValueError(f"{what} '{spec}': {source} does not exist")
        module_spec = importlib.util.spec_from_file_location(os.path.basename(source)[:-3], source)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(source)
    if not callable(getattr(module, factory, None)):
        raise ValueError(f"{what} '{spec}': {source} has no function '{factory}'")
    return getattr(module, factory)()


def load_model(spec: str) -> torch.nn.Module:
    model = torch.load(spec, map_location="cpu", weights_only=False) if os.path.isfile(spec) \
        else call_factory(spec, "model")
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model '{spec}' is a {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def load_batches(spec: str, rows: int | None = None) -> list:
    if ":" in spec and not os.path.isfile(spec):
        data = call_factory(spec, "inputs")
    elif not os.path.isfile(spec):
        raise ValueError(f"inputs '{spec}' does not exist")
    elif spec.endswith(".npy"):
        data = torch.from_numpy(np.load(spec, allow_pickle=False))
    elif spec.endswith(".pt"):
        data = torch.load(spec, map_location="cpu", weights_only=True)
    else:
        raise ValueError(f"inputs '{spec}': want a .pt (torch.save) or .npy file, or MODULE:FACTORY")
    if isinstance(data, torch.Tensor):
        return list(torch.split(data, rows)) if rows else [data]
    if isinstance(data, (list, tuple)) and data:
        return list(data)
    raise ValueError(f"inputs '{spec}': a {type(data).__name__}; want a tensor or a non-empty list of batches")


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
