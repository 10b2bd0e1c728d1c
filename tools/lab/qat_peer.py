#!/usr/bin/env python3
"""The whole-model peer of vkblr-fit's layer-wise pipeline: the same blr
structure trained inside the reference model, in PyTorch (quantization-aware
training with a straight-through estimator, distilled from the dense model's
logits, after LittleBit's recipe).

    python3 tools/lab/qat_peer.py --model DIR --corpus .corpus --out OUT.json
        (--bpw 1 | --rank R | --from-blr FILE) [--paths 2] [--layers "model.layers.*_proj"]
        [--train-tokens 36864] [--steps 600] [--batch 8] [--lr 1e-3,3e-3] [--warmup 30]
        [--temperature 1] [--latent-rms 0] [--compile none|default|reduce-overhead|max-autotune|aot-eager]
        [--weight-form factored|dense]
        [--device cuda] [--eval-every 100] [--eval-documents N] [--flip-check 0]
        [--require-flips] [--seed 1] [--order-seeds 1,2,3]

Structure: every nn.Linear matching --layers becomes Ŵ = Σ_p diag(h)·S_U·diag(ℓ)·
S_Vᵀ·diag(g) with P = --paths paths, as vkblr-fit's layers: the rank from
--bpw by vkblr-fit's rule (the largest multiple of 32 whose bits, signs +
f16 scales + 128, are at most bpw·m·n), or --rank, or each layer's rank,
paths and scales from a vkblr-fit model file (--from-blr: the signs' latents
start at ±latent magnitude 0.1, the scales at the file's). Otherwise the init is
Dual-SVID, the construction of fit_peer.py (dual_svid: per path a
randomized SVD of the residual, signs of U·S^½ and V·S^½, the magnitudes as
rank-one products), latents U·S^½ and V·S^½ (scaled to --latent-rms when
it is not 0). The embeddings, norms and lm_head stay dense and frozen.

Training: latent signs through a straight-through estimator (forward exactly
sign(w), ±1; backward the gradient where |w| ≤ 1, 0 beyond), Adam on the
latents and the scales h, ℓ, g (one learning rate, --warmup steps of linear
warm-up then cosine decay to 0), the loss KL(teacher ‖ student) of the
next-token distributions at --temperature, the teacher's log-probabilities
computed once for the training windows. Those are --train-tokens tokens in
windows of the model's context drawn from the training split by
token_data.calibration_batches with --seed: with the same seed and count,
the very windows layerwise.py calibrates vkblr-fit on. Each step takes
--batch windows, in an order reshuffled every pass (seeded by --seed, or by
each of --order-seeds: a run per seed and learning rate, the same windows,
the spread of the result over data orders). On CUDA under
bf16 autocast, fused Adam; --compile compiles the loss (forward and
backward; reduce-overhead adds CUDA graphs), compiled once and reused for
every learning rate (the parameters are reset in place), its compile time
measured apart (3 warm-up steps, then the parameters and optimizer reset).
aot-eager compiles with dynamo and AOTAutograd but generates no code (a
check of the compiled step's gradients where inductor cannot run).

Sign flips are counted after every step (the signs before and after each
optimizer step, on the device, read at the end): the report has the count
per step. --flip-check K first runs K steps eagerly and K compiled from the
same init at the first learning rate and reports both counts (the compiled
STE must train signs too); --require-flips fails the run (exit 1) when the
compiled check flipped none where the eager one did, or, the report written,
when no timed run of the sweep flipped a sign.

Measured, for every learning rate of --lr: held-out perplexity and bits per
byte (evaluate.py's measure, f32, on Ŵ with the scales rounded to f16 as they
would be stored, the first --eval-documents held-out documents) every
--eval-every steps and at the end, against training tokens processed and
training wall time (evaluations excluded; synchronized); the whole model's
bits (model_bits.py). OUT.json (atomic) holds the settings, the runs, the
best run (lowest final bits per byte) and the device. Runs on a CPU at toy
size (--device cpu --compile none).
"""
from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import time
import types

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools", "model"))
sys.path.insert(0, os.path.join(REPO, "tools", "vkblr-fit", "python"))
from atomic_file import write_json_atomic  # noqa: E402
from checkpoint import load_checkpoint  # noqa: E402
from dump_calibration import name_matcher  # noqa: E402
from evaluate import evaluate_tokens, heldout_tokens  # noqa: E402
from fit_peer import dual_svid  # noqa: E402
from load_blr import layer_bits, read_blr_model  # noqa: E402
from model_bits import model_bits  # noqa: E402
from token_data import calibration_batches  # noqa: E402


def rank_for_bpw(m: int, n: int, paths: int, bpw: float) -> int:
    """vkblr-fit's rule (engine/src/io/bpw.cpp, f16 scales): the largest multiple of 32, at most
    min(m, n) rounded up to 32, whose bits are at most bpw·m·n."""
    if layer_bits(m, n, 32, paths, "F16") > bpw * m * n:
        raise ValueError(f"--bpw {bpw}: too low for a {m}x{n} layer with {paths} path(s): rank 32 takes "
                         f"{layer_bits(m, n, 32, paths, 'F16') / (m * n):.4f} bpw")
    most, rank = (min(m, n) + 31) // 32 * 32, 32
    while rank < most and layer_bits(m, n, rank + 32, paths, "F16") <= bpw * m * n:
        rank += 32
    return rank


def straight_through(w: torch.Tensor) -> torch.Tensor:
    """Forward exactly ±1 (sign, 0 counted +1); backward the gradient where |w| ≤ 1."""
    clipped = w.clamp(-1.0, 1.0)
    return torch.where(w < 0, -1.0, 1.0).to(w.dtype).detach() + (clipped - clipped.detach())


class LatentStore(nn.Module):
    """Every blr layer's latent signs in one flat f32 parameter: the flips of a step are one
    comparison, and Adam updates one tensor."""

    def __init__(self, total: int):
        super().__init__()
        self.flat = nn.Parameter(torch.zeros(total))


class BlrLinear(nn.Module):
    """y = Σ_p ((((x·g_p) S_V,p)·ℓ_p) S_U,pᵀ)·h_p, the signs S = straight_through(latents); the
    latents U'_p [m][r] and V'_p [n][r] are slices of a LatentStore shared by all layers,
    starting at `offset`, path by path, U' then V'."""

    def __init__(self, store: LatentStore, offset: int, m: int, n: int, rank: int, paths: int):
        super().__init__()
        self.store, self.offset = store, offset
        self.m, self.n, self.rank, self.paths = m, n, rank, paths
        self.h = nn.ParameterList([nn.Parameter(torch.zeros(m)) for _ in range(paths)])
        self.l = nn.ParameterList([nn.Parameter(torch.zeros(rank)) for _ in range(paths)])
        self.g = nn.ParameterList([nn.Parameter(torch.zeros(n)) for _ in range(paths)])

    @staticmethod
    def size(m: int, n: int, rank: int, paths: int) -> int:
        return paths * (m + n) * rank

    def latent(self, p: int) -> tuple:
        """(U'_p, V'_p): views of the store."""
        at = self.offset + p * (self.m + self.n) * self.rank
        flat = self.store.flat
        return (flat[at:at + self.m * self.rank].view(self.m, self.rank),
                flat[at + self.m * self.rank:at + (self.m + self.n) * self.rank].view(self.n, self.rank))

    # "factored": through the rank, path by path; "dense": Ŵ formed from the signs and scales, one matmul
    # (the same function and gradients; the form a user picks for many tokens per step)
    form = "factored"

    def forward(self, x):
        if self.form == "dense":
            w = None
            for p in range(self.paths):
                lu, lv = self.latent(p)
                su, sv = straight_through(lu), straight_through(lv)
                wp = ((su * self.l[p]) * self.h[p][:, None]) @ (sv * self.g[p][:, None]).T
                w = wp if w is None else w + wp
            return x @ w.T
        y = None
        for p in range(self.paths):
            lu, lv = self.latent(p)
            su, sv = straight_through(lu), straight_through(lv)
            c = ((((x * self.g[p]) @ sv) * self.l[p]) @ su.T) * self.h[p]
            y = c if y is None else y + c
        return y

    @torch.no_grad()
    def dense(self, scale_dtype: torch.dtype | None) -> torch.Tensor:
        """Ŵ in f64 (then f32) from the signs and the scales rounded to `scale_dtype`."""
        w = torch.zeros(self.m, self.n, dtype=torch.float64, device=self.h[0].device)
        r = (lambda t: t.to(scale_dtype).double()) if scale_dtype else (lambda t: t.double())
        for p in range(self.paths):
            lu, lv = self.latent(p)
            su = torch.where(lu < 0, -1.0, 1.0).double()
            sv = torch.where(lv < 0, -1.0, 1.0).double()
            w += r(self.h[p])[:, None] * ((su * r(self.l[p])) @ (sv * r(self.g[p])[:, None]).T)
        return w.float()


def initial_paths(args, weight: torch.Tensor, name: str, from_blr: dict | None) -> list:
    """[(latent_u, latent_v, h, l, g)] of one layer, f32 on the weight's device."""
    m, n = weight.shape
    if from_blr is not None:
        layer = from_blr.get(name + ".weight")
        if layer is None or (layer.m, layer.n) != (m, n):
            raise ValueError(f"{args.from_blr}: no layer {name}.weight of {m}x{n}")
        out = []
        for p in layer.paths:
            k = np.arange(layer.rank)

            def signs(bits):
                return ((bits[:, k // 32] >> (k % 32).astype(np.uint32)) & 1).astype(np.float32) * 2 - 1
            t = [torch.from_numpy(a).to(weight.device) for a in (signs(p.bits_u) * 0.1, signs(p.bits_v) * 0.1,
                                                                p.h, p.l, p.g)]
            out.append(tuple(x.float() for x in t))
        return out
    rank = args.rank or rank_for_bpw(m, n, args.paths, args.bpw)
    paths = dual_svid(weight.double(), rank, args.paths)
    out = []
    for up, vp, h, ell, g in paths:
        if args.latent_rms:
            up, vp = (t * (args.latent_rms / t.pow(2).mean().sqrt()) for t in (up, vp))
        out.append(tuple(t.float().contiguous() for t in (up, vp, h, ell, g)))
    return out


def build_student(teacher, names: list, init: dict):
    """A copy of the teacher, frozen, with a BlrLinear for each named layer (all sharing one
    LatentStore, `student.blr_latents`), set to `init`."""
    student = copy.deepcopy(teacher)
    for p in student.parameters():
        p.requires_grad_(False)
    shapes = {n: (x[0][0].shape[0], x[0][1].shape[0], x[0][0].shape[1], len(x)) for n, x in init.items()}
    device = init[names[0]][0][0].device
    store = LatentStore(sum(BlrLinear.size(*shapes[n]) for n in names)).to(device)
    student.blr_latents = store
    offset = 0
    for name in names:
        parent, _, attr = name.rpartition(".")
        setattr(student.get_submodule(parent), attr, BlrLinear(store, offset, *shapes[name]).to(device))
        offset += BlrLinear.size(*shapes[name])
    reset(student, names, init)
    return student


@torch.no_grad()
def reset(student, names: list, init: dict) -> None:
    for name in names:
        blr = student.get_submodule(name)
        for p, (lu, lv, h, ell, g) in enumerate(init[name]):
            for param, value in zip((*blr.latent(p), blr.h[p], blr.l[p], blr.g[p]), (lu, lv, h, ell, g)):
                param.copy_(value)


def blr_parameters(student, names: list) -> list:
    """The trained parameters: the latent store and every layer's scales (each once)."""
    params = [student.blr_latents.flat]
    for name in names:
        blr = student.get_submodule(name)
        params += list(blr.h) + list(blr.l) + list(blr.g)
    return params


def materialize(evaluator, student, names: list) -> None:
    with torch.no_grad():
        for name in names:
            evaluator.get_submodule(name).weight.copy_(student.get_submodule(name).dense(torch.float16))


class Trainer:
    """The step and its state; `loss_fn` is compiled once and reused for every run."""

    def __init__(self, args, student, names, windows, teacher_logp):
        self.args, self.student, self.names = args, student, names
        self.windows, self.teacher_logp = windows, teacher_logp
        self.cuda = args.device.startswith("cuda")
        t = args.temperature

        def loss_fn(x, target_logp):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.cuda):
                logits = student(x)
            logp = torch.log_softmax(logits.float() / t, dim=-1)
            kl = (target_logp.exp() * (target_logp - logp)).sum(-1).mean()
            return kl * t * t
        self.eager = loss_fn
        if args.compile == "none":
            self.compiled = loss_fn
        elif args.compile == "aot-eager":  # dynamo and AOTAutograd without code generation: a CPU check
            self.compiled = torch.compile(loss_fn, backend="aot_eager")
        else:
            self.compiled = torch.compile(loss_fn, mode=None if args.compile == "default" else args.compile)

    def optimizer(self, lr: float):
        params = blr_parameters(self.student, self.names)
        return torch.optim.Adam(params, lr=lr, **({"fused": True} if self.cuda else {}))

    def run(self, lr: float, steps: int, compiled: bool, evaluate=None, eval_every: int = 0,
            order_seed: int | None = None) -> dict:
        """`steps` steps from the parameters as they are, windows in the order of `order_seed` (default
        --seed); flips per step, curve, times."""
        a = self.args
        opt = self.optimizer(lr)
        loss_fn = self.compiled if compiled else self.eager
        latent = self.student.blr_latents.flat
        before = latent.detach() < 0
        flips = torch.zeros(steps, dtype=torch.int64, device=a.device)
        count = self.windows.shape[0]
        rng = np.random.Generator(np.random.PCG64(a.seed if order_seed is None else order_seed))
        order, at = rng.permutation(count), 0
        curve, train_s, losses = [], 0.0, []
        if evaluate is not None:
            curve.append({"step": 0, "tokens": 0, "train_s": 0.0, **evaluate()})
        self.sync()
        started = time.time()
        for step in range(steps):
            if at + a.batch > count:
                order, at = rng.permutation(count), 0
            index = torch.from_numpy(order[at:at + a.batch]).to(a.device)
            at += a.batch
            scale = (step + 1) / a.warmup if step < a.warmup else \
                0.5 * (1 + math.cos(math.pi * (step - a.warmup) / max(1, steps - a.warmup)))
            for group in opt.param_groups:
                group["lr"] = lr * scale
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(self.windows[index], self.teacher_logp[index])
            loss.backward()
            opt.step()
            with torch.no_grad():
                now = latent < 0
                flips[step] = (now != before).sum()
                before = now
            if step % 50 == 0 or step == steps - 1:
                losses.append((step, loss.detach().clone()))
            if evaluate is not None and ((step + 1) % eval_every == 0 or step == steps - 1):
                self.sync()
                train_s += time.time() - started
                point = {"step": step + 1, "tokens": (step + 1) * a.batch * self.windows.shape[1],
                         "train_s": round(train_s, 3), **evaluate()}
                curve.append(point)
                print(f"  lr {lr:g} step {step + 1}: held-out {point['bits_per_byte']:.4f} bits per byte, "
                      f"{int(flips[:step + 1].sum())} sign flips so far, {train_s:.1f} s", flush=True)
                self.sync()
                started = time.time()
        self.sync()
        if evaluate is None:
            train_s += time.time() - started
        per_step = flips.cpu().tolist()
        return {"lr": lr, "steps": steps, "compiled": compiled, "train_s": round(train_s, 3),
                "flips_per_step": per_step, "flips": int(sum(per_step)),
                "loss": [{"step": s, "kl": float(v)} for s, v in losses], "curve": curve}

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()


def peer(args) -> dict:
    started = time.time()
    torch.manual_seed(args.seed)
    teacher = load_checkpoint(args.model).to(args.device)
    context = teacher.config.max_position_embeddings
    matches = name_matcher(args.layers)
    names = [n for n, m in teacher.named_modules() if isinstance(m, nn.Linear) and matches(n)]
    if not names:
        raise ValueError(f"--layers '{args.layers}' matches no nn.Linear")
    from_blr = read_blr_model(args.from_blr) if args.from_blr else None
    t0 = time.time()
    init = {n: initial_paths(args, teacher.get_submodule(n).weight.detach(), n, from_blr) for n in names}
    init_s = time.time() - t0
    windows = torch.cat(calibration_batches(args.corpus, args.train_tokens, context, args.seed)).to(args.device)
    t0 = time.time()
    with torch.no_grad():
        parts = []
        for chunk in torch.split(windows, 8):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.device.startswith("cuda")):
                parts.append(torch.log_softmax(teacher(chunk).float() / args.temperature, dim=-1))
        teacher_logp = torch.cat(parts)
    teacher_s = time.time() - t0
    BlrLinear.form = args.weight_form
    student = build_student(teacher, names, init)
    bits_layers = {n + ".weight": types.SimpleNamespace(m=x[0][0].shape[0], n=x[0][1].shape[0],
                                                        rank=x[0][0].shape[1], paths=x, scale_dtype="F16")
                   for n, x in init.items()}
    bits = model_bits(teacher.config.parameter_shapes(), bits_layers)
    tokens, text_bytes, docs = heldout_tokens(args.corpus, args.eval_documents)
    evaluator = copy.deepcopy(teacher).float()

    def evaluate():
        materialize(evaluator, student, names)
        r = evaluate_tokens(evaluator, tokens, text_bytes, context, context // 2, 8, args.device)
        return {k: r[k] for k in ("perplexity", "bits_per_byte", "loss_nats", "tokens_scored", "bytes")}

    dense_eval = evaluate_tokens(teacher, tokens, text_bytes, context, context // 2, 8, args.device)
    trainer = Trainer(args, student, names, windows, teacher_logp)
    lrs = [float(x) for x in args.lr.split(",")]
    result = {"settings": {k: v for k, v in vars(args).items()}, "layers": len(names), "context": context,
              "train_windows": windows.shape[0], "model_bits": bits, "init_s": round(init_s, 3),
              "teacher_s": round(teacher_s, 3), "dense": dense_eval, "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"}
    init_eval = evaluate()
    result["init"] = init_eval
    print(f"qat_peer: {len(names)} layers, {bits['blr']['bpw']:.4f} bpw over them, whole model {bits['bpw']:.4f} "
          f"bpw; {windows.shape[0]} windows of {context} ({args.train_tokens} tokens); dense "
          f"{dense_eval['bits_per_byte']:.4f}, init {init_eval['bits_per_byte']:.4f} bits per byte", flush=True)
    if args.compile != "none":  # compile before anything is timed
        t0 = time.time()
        trainer.run(lrs[0], 3, compiled=True)
        reset(student, names, init)
        result["compile_s"] = round(time.time() - t0, 3)
    if args.flip_check:
        eager = trainer.run(lrs[0], args.flip_check, compiled=False)
        reset(student, names, init)
        compiled = trainer.run(lrs[0], args.flip_check, compiled=True)
        reset(student, names, init)
        result["flip_check"] = {"steps": args.flip_check, "eager": eager["flips_per_step"],
                                "compiled": compiled["flips_per_step"]}
        print(f"qat_peer: flip check, {args.flip_check} steps at lr {lrs[0]:g}: eager {eager['flips']} flips, "
              f"compiled ({args.compile}) {compiled['flips']}", flush=True)
        if args.require_flips and eager["flips"] > 0 and compiled["flips"] == 0:
            raise ValueError(f"the compiled step ({args.compile}) flipped no sign where the eager one flipped "
                             f"{eager['flips']}: its straight-through estimator does not train the signs")
    runs = []
    for lr, order_seed in [(lr, s) for lr in lrs for s in args.order_seeds or [args.seed]]:
        reset(student, names, init)
        run = trainer.run(lr, args.steps, compiled=True, evaluate=evaluate, eval_every=args.eval_every,
                          order_seed=order_seed)
        run["order_seed"] = order_seed
        run["final"] = run["curve"][-1]
        runs.append(run)
        seed_note = f", order seed {order_seed}" if args.order_seeds else ""
        print(f"qat_peer: lr {lr:g}{seed_note}: {run['final']['bits_per_byte']:.4f} bits per byte, perplexity "
              f"{run['final']['perplexity']:.4f} after {args.steps} steps ({run['final']['tokens']} tokens) in "
              f"{run['train_s']:.1f} s; {run['flips']} sign flips", flush=True)
    result["runs"] = runs
    best = min(runs, key=lambda r: r["final"]["bits_per_byte"])
    result["best"] = {"lr": best["lr"], "order_seed": best["order_seed"], **best["final"], "train_s": best["train_s"],
                      "flips": best["flips"]}
    result["wall_s"] = round(time.time() - started, 2)
    write_json_atomic(args.out, result)
    # A small learning rate may move no latent across zero; no run of the sweep flipping any sign means the
    # timed step does not train them.
    if args.require_flips and all(run["flips"] == 0 for run in runs):
        raise ValueError(f"no sign flipped in {args.steps} steps at any learning rate ({args.lr}): the timed step "
                         "does not train the signs")
    print(f"qat_peer: best lr {best['lr']:g}: {best['final']['bits_per_byte']:.4f} bits per byte (dense "
          f"{dense_eval['bits_per_byte']:.4f}); wrote {args.out}", flush=True)
    return result


def main(argv=None) -> int:
    first, _, rest = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(description=first, epilog=rest,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--out", required=True, help="the report, JSON")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--bpw", type=float)
    size.add_argument("--rank", type=int)
    size.add_argument("--from-blr", help="a vkblr-fit model file: start from its layers")
    parser.add_argument("--paths", type=int, default=2)
    parser.add_argument("--weight-form", choices=("factored", "dense"), default="factored",
                        help="the blr layers through their rank (factored) or through Ŵ formed each step (dense)")
    parser.add_argument("--layers", default="model.layers.*_proj")
    parser.add_argument("--train-tokens", type=int, default=9 * 4096)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=8, help="windows per step")
    parser.add_argument("--lr", default="1e-3", help="learning rates, comma-separated (a sweep)")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--latent-rms", type=float, default=0.0)
    parser.add_argument("--compile", choices=["none", "default", "reduce-overhead", "max-autotune", "aot-eager"],
                        default="none")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--eval-documents", type=int)
    parser.add_argument("--flip-check", type=int, default=0)
    parser.add_argument("--require-flips", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--order-seeds", help="seeds of the windows' order, comma-separated: a run for each "
                        "(and each learning rate) on the windows of --seed; default: --seed alone")
    args = parser.parse_args(argv)
    if args.rank is not None and (args.rank < 32 or args.rank % 32):
        parser.error(f"--rank {args.rank}: want a positive multiple of 32")
    if min(args.steps, args.batch, args.eval_every, args.train_tokens, args.paths) < 1 or args.warmup < 0:
        parser.error("--steps, --batch, --eval-every, --train-tokens and --paths must be at least 1")
    if args.order_seeds is not None:  # parsed here, once: a list of ints from now on
        text = args.order_seeds
        try:
            args.order_seeds = [int(x) for x in text.split(",")]
            if min(args.order_seeds) < 0:
                raise ValueError
        except ValueError:
            parser.error(f"--order-seeds '{text}': want non-negative integers, comma-separated")
    try:
        peer(args)
    except (ValueError, OSError) as e:
        print(f"qat_peer: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
