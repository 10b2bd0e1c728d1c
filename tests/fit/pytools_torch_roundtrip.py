"""From a PyTorch model to a compressed checkpoint and back, through the
command lines the guide shows: dump_calibration.py on tiny_torch_model.py,
vkblr-fit --manifest on what it wrote, load_blr.py on the result.

    python3 pytools_torch_roundtrip.py --work DIR --fit VKBLR_FIT --read-back VKBLR_FIT_READ_BACK

Checks: the dump is the model's (weights bit for bit, recorded rows a
subsequence of the inputs in order, the manifest's pattern and template)
and the same on a second run; load_blr's Ŵ of every layer is vkblr-fit's
own (vkblr-fit-read-back dense, tests/fit/read_back.cpp) within f64
rounding, in the model file and in each layer's result file; each layer's
held-out output error in vkblr-fit's report is what the model with the
layer swapped in gives (within a bound of the device's f16 staging) and,
replaying the device's f16 staging on the rebuilt layer, what the device
computed (within f32 summation order); the command line's --dense and
--model outputs.
"""
import json
import os
import re
import sys

from pytools_support import TOOLS, check, dense_tolerance, main, options, require_modules, run

require_modules("numpy", "torch")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import tiny_torch_model  # noqa: E402
from load_blr import output_change, read_blr_model, read_blr_result, replace_linear_weights, signs  # noqa: E402
from safetensors_file import SafetensorsFile  # noqa: E402

args = options()
WORK = args.work
MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_torch_model.py") + ":make"
LAYERS = ["blocks.0.up", "blocks.0.down", "blocks.1.up", "blocks.1.down"]
U16, U32, F16_SUBNORMAL = 2.0**-11, 2.0**-24, 2.0**-25  # unit roundoffs; half f16's subnormal spacing


def dump(out, inputs):
    return run([sys.executable, os.path.join(TOOLS, "dump_calibration.py"), "--model", MODEL, "--inputs", inputs,
                "--out", out, "--layers", "blocks.*", "--batch", "64", "--set", "rank=32", "--set", "steps=8"],
               cwd=WORK)


def setup():
    torch.save(tiny_torch_model.make_inputs(), os.path.join(WORK, "inputs.pt"))
    p = dump("calib", "inputs.pt")
    check("blocks.0.up: 96x64, 768 tokens seen, 576 kept" in p.stdout, f"dump's output:\n{p.stdout}")
    run([args.fit, "--manifest", "calib/job.json", "--out", "calib/compressed", "--quiet"], cwd=WORK)
    run([args.read_back, "dense", "calib/compressed.safetensors", "calib/dense_cpp.safetensors"], cwd=WORK)


def path(name):
    return os.path.join(WORK, "calib", name)


def manifest_defaults():
    with open(path("job.json")) as f:
        return json.load(f)["defaults"]


def test_the_dump_is_the_models():
    model = tiny_torch_model.make()
    weights, acts = SafetensorsFile(path("weights.safetensors")), SafetensorsFile(path("activations.safetensors"))
    check(sorted(weights.tensors) == sorted(f"{n}.weight" for n in LAYERS), f"weights: {list(weights.tensors)}")
    for name in LAYERS:
        w = model.get_submodule(name).weight.detach().numpy()
        check(np.array_equal(weights.array(f"{name}.weight"), w), f"{name}.weight differs from the model's")
    # blocks.0.up sees the model's input: its rows, f16, in the order they came, no row twice
    inputs = torch.cat([b.reshape(-1, 64) for b in tiny_torch_model.make_inputs()]).half().numpy()
    kept = acts.array("blocks.0.up.input")
    check(kept.dtype == np.float16 and kept.shape == (576, 64), f"blocks.0.up.input is {kept.dtype} {kept.shape}")
    where = {row.tobytes(): i for i, row in enumerate(inputs)}
    index = [where.get(row.tobytes(), -1) for row in kept]
    check(min(index) >= 0 and all(a < b for a, b in zip(index, index[1:])),
          "the recorded rows are not a subsequence of the inputs, in order")
    check(max(index) > 576, "no row after the first 576: the sampler kept the first rows, not a sample")
    with open(path("job.json")) as f:
        manifest = json.load(f)
    want = {"defaults": {"batch": 64, "tokens": 512, "held_out": 64, "rank": 32, "steps": 8},
            "layers": [{"weight": "weights.safetensors", "tensors": "blocks.*.weight",
                        "activations": "activations.safetensors", "activations_tensor": "{module}.input"}]}
    check(manifest == want, f"job.json: {manifest}")


def test_the_dump_is_the_same_every_run():
    """Again, the inputs from their factory rather than the file saved from it: the same bytes."""
    dump("again", MODEL.replace(":make", ":make_inputs"))
    for name in ["weights.safetensors", "activations.safetensors", "job.json"]:
        with open(path(name), "rb") as a, open(os.path.join(WORK, "again", name), "rb") as b:
            check(a.read() == b.read(), f"{name} differs between two runs")


def test_rebuilt_weights_are_vkblr_fits():
    """Ŵ from load_blr and from vkblr-fit's DensePath::weight() (Eigen, f64), within f64 rounding
    (dense_tolerance); a layer's result file and its part of the model file give the same bits."""
    layers = read_blr_model(path("compressed.safetensors"))
    cpp = SafetensorsFile(path("dense_cpp.safetensors"))
    check(sorted(layers) == sorted(f"{n}.weight" for n in LAYERS), f"layers {list(layers)}")
    for name, layer in layers.items():
        diff = np.abs(layer.dense() - cpp.array(name))
        check(np.all(diff <= dense_tolerance(layer)), f"{name}: Ŵ differs from vkblr-fit's by up to {diff.max()}")
        single = read_blr_result(path(f"compressed.layers/{name}.safetensors"))
        check(np.array_equal(single.dense(), layer.dense()), f"{name}: the layer's result file has another Ŵ")


def held_out(name, layers):
    """The layer's held-out rows X (vkblr-fit's: right after the training tokens), W and Ŵ as the
    swapped model holds it (f32), all f64."""
    d = manifest_defaults()
    x = SafetensorsFile(path("activations.safetensors")).array(name + ".input")
    model = tiny_torch_model.make()
    w = model.get_submodule(name).weight.detach().double().numpy()
    replace_linear_weights(model, layers)
    w_hat = model.get_submodule(name).weight.detach().double().numpy()
    return x[d["tokens"]:d["tokens"] + d["held_out"]].astype(np.float64), w, w_hat


def device_error(layer, x, w):
    """The held-out output error as the device computes it (kernels.md), with f64 sums: targets
    f16(X)·f16(W)ᵀ; per path a = f16(f32(x·g))·S_V, c = f16(f32(a·ℓ))·S_Uᵀ, y += h·c."""
    f16 = lambda v: v.astype(np.float32).astype(np.float16).astype(np.float64)  # noqa: E731
    target = x @ f16(w).T
    y = np.zeros_like(target)
    for p in layer.paths:
        a = f16(x.astype(np.float32) * p.g) @ signs(p.bits_v, layer.rank)
        c = f16(a.astype(np.float32) * p.l) @ signs(p.bits_u, layer.rank).T
        y += p.h.astype(np.float64) * c
    return np.linalg.norm(y - target) / np.linalg.norm(target)


def staging_bounds(layer, x, w):
    """Elementwise bounds of what the device's f16 staging and f32 sums add to the targets y* and
    the layer's outputs ŷ, on rows x [T][n] (f16 values), to first order, by 1.01 for the rest:
      y* = f16(X)·f16(W)ᵀ:  |δ| ≤ (u16 + γn)·|X|·|W|ᵀ + 2⁻²⁵·Σ_j|x_j|
      per path: xs = f16(x·g) within u16 + u32 (and 2⁻²⁵); a = xs·S_V: |δa| ≤ ea = (u16 + u32 + γn)·Σ_j|x_j·g_j|
      + n·2⁻²⁵; f16(a·ℓ) within |δa|·|ℓ| + (u16 + u32)·|a·ℓ|; c = ·S_Uᵀ adds γr·Σ_k|a_k·ℓ_k|; y += h·c
      rounds each add in f32."""
    gamma = lambda k: k * U32 / (1 - k * U32)  # noqa: E731
    ax = np.abs(x)
    d_target = (U16 + gamma(layer.n)) * (ax @ np.abs(w).T) + F16_SUBNORMAL * ax.sum(1, keepdims=True)
    d_out = np.zeros_like(d_target)
    for p in layer.paths:
        g, ell, h = (np.abs(v.astype(np.float64)) for v in (p.g, p.l, p.h))
        a = np.abs((x * p.g) @ signs(p.bits_v, layer.rank))
        ea = (U16 + U32 + gamma(layer.n)) * (ax @ g)[:, None] + layer.n * F16_SUBNORMAL
        u = U16 + U32 + gamma(layer.rank)
        ec = (ea * ell * (1 + u) + u * a * ell + F16_SUBNORMAL).sum(1, keepdims=True)
        d_out += (ec + (len(layer.paths) + 1) * U32 * (a @ ell)[:, None]) * h
    return 1.01 * d_target, 1.01 * d_out


def test_reported_errors_are_the_swapped_models():
    with open(path("compressed.json")) as f:
        reported = {row["name"]: row["errors"]["trained"]["output"] for row in json.load(f)["layers"]}
    layers = read_blr_model(path("compressed.safetensors"))
    for name in LAYERS:
        layer, report = layers[name + ".weight"], reported[name + ".weight"]
        x, w, w_hat = held_out(name, layers)
        # the device's arithmetic replayed: only the order of its f32 sums differs (γ96 ≈ 6e-6 of
        # each sum's magnitude, and a rare staged value one f16 step away)
        replay = device_error(layer, x, w)
        check(abs(replay - report) <= 1e-4 * report, f"{name}: replayed {replay}, reported {report}")
        # the swapped model's error, and how far the device's staging can move it
        target, residual = np.linalg.norm(x @ w.T), np.linalg.norm(x @ (w_hat - w).T)
        d_target, d_out = staging_bounds(layer, x, w)
        d_swap = U32 * np.abs(x) @ np.abs(layer.dense()).T  # Ŵ rounded to the model's f32
        spread = np.linalg.norm(d_out) + np.linalg.norm(d_target) + np.linalg.norm(d_swap)
        low = (residual - spread) / (target + np.linalg.norm(d_target))
        high = (residual + spread) / (target - np.linalg.norm(d_target))
        check(low <= report <= high, f"{name}: reported {report}, the swapped model's {residual / target} "
              f"(staging bound [{low}, {high}])")
        print(f"      {name}: reported {report:.6f}, swapped model {residual / target:.6f}, replayed {replay:.6f}")


def test_the_command_line_writes_and_compares():
    p = run([sys.executable, os.path.join(TOOLS, "load_blr.py"), "calib/compressed.safetensors", "--dense",
             "calib/dense.safetensors", "--model", MODEL, "--inputs", "inputs.pt"], cwd=WORK)
    layers = read_blr_model(path("compressed.safetensors"))
    dense = SafetensorsFile(path("dense.safetensors"))
    for name, layer in layers.items():
        check(np.array_equal(dense.array(name), layer.dense().astype(np.float32)), f"--dense {name} is not Ŵ in f32")
    found = re.search(r"4 nn.Linear weights replaced; the model's outputs changed by ([0-9.e+-]+)", p.stdout)
    check(found is not None, f"load_blr's output:\n{p.stdout}")
    change = output_change(tiny_torch_model.make(), layers, tiny_torch_model.make_inputs())
    check(f"{change:.4e}" == found.group(1), f"printed {found.group(1)}, computed here {change:.4e}")
    check(0 < change < 1, f"the model's outputs changed by {change}")


setup()
main({name: f for name, f in globals().items() if name.startswith("test_")})
