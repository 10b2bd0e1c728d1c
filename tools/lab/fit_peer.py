#!/usr/bin/env python3
"""The PyTorch peer of vkblr-fit, and the layer families both are measured on.

    fit_peer.py families --out DIR [--shape 3584x1024] [--tokens 32768] [--held-out 4096]
                         [--rank 384] [--seed 1] [--family default,exponential,planted]
        writes DIR/<family>.w.npy (f32 [m][n]) and DIR/<family>.x.npy
        (f32 [tokens + held-out][n]) for each family:
          default      vkblr-fit's synthetic layer: singular values (i+1)^-0.6,
                       4 input columns x4, rms 0.02; activations with covariance
                       eigenvalues (i+1)^-1 in a random basis, 4 channels x10
          exponential  singular values exp(-i/(s/6)) + 0.05 (s = --spectrum-rank,
                       default the rank), 1 % of the input
                       columns x4, unit standard deviation; independent
                       standard Gaussian activations, 1/64 of the channels x8
          planted      a blr layer of `rank` (2 paths, random signs, h and g
                       uniform in [0.5, 1.5], l_k = exp(-4k/rank)) plus 1 %
                       Gaussian noise, unit standard deviation; activations as
                       `exponential`'s

    fit_peer.py train --w W.npy --x X.npy --rank R [--paths 2] [--steps 2000]
                      [--batch 4096] [--held-out 4096] [--lr 1e-3] [--json]
        the peer: Dual-SVID init (a randomized SVD, torch.svd_lowrank with 16
        extra samples and 3 power iterations, then the same construction as
        vkblr-fit's), latent signs trained through a
        straight-through estimator (sign forward, identity backward inside
        |w| <= 1), Adam (lr 1e-3) on the latents and the scales h, l, g, bf16
        autocast, 50 warm-up steps then cosine decay, `batch` tokens per step
        over the training tokens in order. The step (forward, backward, Adam)
        is compiled with torch.compile and captured in one CUDA graph; the
        training time is the wall time of the replays (synchronized). Prints
        the held-out output error ||X_h(W^ - W)^T|| / ||X_h W^T|| before and
        after, and the times, as JSON.

Runs on the GPU machine (PyTorch 2.11); not part of the build or the tests.
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch


def orthonormal(rows, cols, gen, device):
    g = torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float64)
    q, r = torch.linalg.qr(g)
    return q * torch.sign(torch.diagonal(r)).unsqueeze(0)


def with_spectrum(m, n, sigma, gen, device):
    k = sigma.numel()
    u = orthonormal(m, k, gen, device)
    v = orthonormal(n, k, gen, device)
    return (u * sigma.unsqueeze(0)) @ v.T


def pick(n, count, gen, device):
    return torch.randperm(n, generator=gen, device=device)[:count]


def family(name, m, n, tokens, rank, seed, device, spectrum_rank=0):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    k = min(m, n)
    i = torch.arange(k, device=device, dtype=torch.float64)
    if name == "default":
        w = with_spectrum(m, n, (i + 1) ** -0.6, gen, device)
        w[:, pick(n, 4, gen, device)] *= 4
        w *= 0.02 / w.pow(2).mean().sqrt()
        lam = (torch.arange(n, device=device, dtype=torch.float64) + 1) ** -1.0
        lam *= n / lam.sum()
        q = orthonormal(n, n, gen, device)
        mix = lam.sqrt().unsqueeze(1) * q.T  # mix[c][j] = sqrt(l_c) q[j][c]
        dev = torch.ones(n, device=device, dtype=torch.float64)
        dev[pick(n, 4, gen, device)] = 10
        z = torch.randn(tokens, n, generator=gen, device=device, dtype=torch.float32)
        x = (z @ mix.float()) * dev.float().unsqueeze(0)
        return w.float(), x
    if name == "exponential":
        w = with_spectrum(m, n, torch.exp(-i / ((spectrum_rank or rank) / 6)) + 0.05, gen, device)
        w[:, pick(n, max(1, n // 100), gen, device)] *= 4
    elif name == "planted":
        w = torch.zeros(m, n, device=device, dtype=torch.float64)
        kk = torch.arange(rank, device=device, dtype=torch.float64)
        for _ in range(2):
            su = torch.randint(0, 2, (m, rank), generator=gen, device=device).double() * 2 - 1
            sv = torch.randint(0, 2, (n, rank), generator=gen, device=device).double() * 2 - 1
            h = 0.5 + torch.rand(m, generator=gen, device=device, dtype=torch.float64)
            g = 0.5 + torch.rand(n, generator=gen, device=device, dtype=torch.float64)
            l = torch.exp(-4 * kk / rank)
            w += (h.unsqueeze(1) * su * l.unsqueeze(0)) @ (g.unsqueeze(1) * sv).T
        w += 0.01 * w.pow(2).mean().sqrt() * torch.randn(m, n, generator=gen, device=device, dtype=torch.float64)
    else:
        raise SystemExit(f"unknown family {name}")
    w /= w.pow(2).mean().sqrt()
    x = torch.randn(tokens, n, generator=gen, device=device, dtype=torch.float32)
    x[:, pick(n, max(1, n // 64), gen, device)] *= 8
    return w.float(), x


def cmd_families(a):
    m, n = (int(v) for v in a.shape.split("x"))
    os.makedirs(a.out, exist_ok=True)
    for name in a.family.split(","):
        t0 = time.time()
        w, x = family(name, m, n, a.tokens + a.held_out, a.rank, a.seed, "cuda", a.spectrum_rank)
        tag = name if not a.spectrum_rank else f"{name}{a.spectrum_rank}"
        np.save(os.path.join(a.out, f"{tag}.w.npy"), w.cpu().numpy())
        np.save(os.path.join(a.out, f"{tag}.x.npy"), (x.half() if a.x_f16 else x).cpu().numpy())
        print(f"{name}: W {m}x{n}, X {x.shape[0]}x{n} in {time.time() - t0:.1f} s", flush=True)


# ---- the peer ---------------------------------------------------------------

def rank_one_nonneg(a, iters=200):
    """a ~ s t^T for a >= 0 (top singular pair by power iteration)."""
    v = torch.full((a.shape[1],), 1.0 / math.sqrt(a.shape[1]), device=a.device, dtype=a.dtype)
    sigma = a.new_zeros(())
    for _ in range(iters):
        u = a @ v
        u = u / u.norm().clamp_min(1e-300)
        nv = a.T @ u
        sigma = nv.norm()
        v = nv / sigma.clamp_min(1e-300)
    root = sigma.sqrt()
    return (a @ v) / sigma.clamp_min(1e-300) * root, v * root


def dual_svid(w, rank, paths):
    """Per path on the residual: S = sign(U S^1/2), |U S^1/2| ~ h l_u^T, ... (vkblr-fit's init)."""
    res = w.double().clone()
    out = []
    for _ in range(paths):
        q = min(rank + 16, min(w.shape))
        u, s, v = torch.svd_lowrank(res.float(), q=q, niter=3)
        u, s, v = u.double(), s.double(), v.double()
        k = min(rank, s.numel())
        up = torch.zeros(w.shape[0], rank, device=w.device, dtype=torch.float64)
        vp = torch.zeros(w.shape[1], rank, device=w.device, dtype=torch.float64)
        up[:, :k] = u[:, :k] * s[:k].sqrt()
        vp[:, :k] = v[:, :k] * s[:k].sqrt()
        h, lu = rank_one_nonneg(up.abs())
        g, lv = rank_one_nonneg(vp.abs())
        l = lu * lv
        rms = lambda t: t.pow(2).mean().sqrt()
        common = (rms(h) * rms(l) * rms(g)) ** (1 / 3)
        h, l, g = h * common / rms(h), l * common / rms(l), g * common / rms(g)
        su = torch.where(up < 0, -1.0, 1.0).double()
        sv = torch.where(vp < 0, -1.0, 1.0).double()
        out.append((up, vp, h, l, g))
        res -= (h.unsqueeze(1) * su * l.unsqueeze(0)) @ (g.unsqueeze(1) * sv).T
    return out


class Ste(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w):
        ctx.save_for_backward(w)
        return torch.where(w < 0, -1.0, 1.0).to(w.dtype)

    @staticmethod
    def backward(ctx, grad):
        (w,) = ctx.saved_tensors
        return grad * (w.abs() <= 1).to(grad.dtype)


class Peer(torch.nn.Module):
    def __init__(self, init, latent_rms):
        super().__init__()
        # latents: U' and V' as they are (latent_rms 0), or scaled to that
        # root-mean-square; their magnitudes say how sure a sign is
        def latent(t):
            return torch.nn.Parameter((t if latent_rms == 0 else t * (latent_rms / t.pow(2).mean().sqrt())).float())
        self.lu = torch.nn.ParameterList([latent(up) for up, *_ in init])
        self.lv = torch.nn.ParameterList([latent(vp) for _, vp, *_ in init])
        self.h = torch.nn.ParameterList([torch.nn.Parameter(p[2].float()) for p in init])
        self.l = torch.nn.ParameterList([torch.nn.Parameter(p[3].float()) for p in init])
        self.g = torch.nn.ParameterList([torch.nn.Parameter(p[4].float()) for p in init])

    def forward(self, x):
        y = None
        for p in range(len(self.h)):
            su, sv = Ste.apply(self.lu[p]), Ste.apply(self.lv[p])
            a = (x * self.g[p]) @ sv
            c = ((a * self.l[p]) @ su.T) * self.h[p]
            y = c if y is None else y + c
        return y

    @torch.no_grad()
    def weight(self):
        return sum((h.unsqueeze(1) * torch.where(lu < 0, -1.0, 1.0) * l.unsqueeze(0))
                   @ (g.unsqueeze(1) * torch.where(lv < 0, -1.0, 1.0)).T
                   for lu, lv, h, l, g in zip(self.lu, self.lv, self.h, self.l, self.g))


def held_out_error(w_hat, w, xh):
    with torch.no_grad():
        ref = xh @ w.T
        return ((xh @ w_hat.T - ref).norm() / ref.norm()).item()


def cmd_train(a):
    dev = "cuda"
    w = torch.from_numpy(np.load(a.w)).to(dev)
    x = torch.from_numpy(np.load(a.x)).to(dev).float()
    train = x[: x.shape[0] - a.held_out]
    xh = x[x.shape[0] - a.held_out:]
    batches = train.shape[0] // a.batch
    t0 = time.time()
    init = dual_svid(w, a.rank, a.paths)
    torch.cuda.synchronize()
    init_s = time.time() - t0
    model = Peer(init, a.latent_rms).to(dev)
    init_err = held_out_error(model.weight(), w, xh)
    init_signs = [(t < 0).clone() for t in list(model.lu) + list(model.lv)]
    targets = train @ w.T
    norm = targets[: a.batch].pow(2).sum() / a.batch  # per-token squared target norm

    lr = torch.tensor(a.lr, device=dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr, capturable=True)
    static_x = torch.empty(a.batch, w.shape[1], device=dev)
    static_t = torch.empty(a.batch, w.shape[0], device=dev)

    def loss_fn(xb, tb):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = model(xb)
        return (y.float() - tb).pow(2).sum() / (norm * a.batch)

    compiled = loss_fn if a.no_compile else torch.compile(loss_fn)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = compiled(static_x, static_t)
        loss.backward()
        opt.step()
        return loss

    def schedule(s):
        if s < a.warmup:
            return a.lr * (s + 1) / a.warmup
        t = (s - a.warmup) / max(1, a.steps - a.warmup)
        return a.lr * 0.5 * (1 + math.cos(math.pi * t))

    if a.eager:  # no compile, no graph: the reference for the captured step's result
        torch.cuda.synchronize()
        t0 = time.time()
        for s in range(a.steps):
            b = s % batches
            lr.fill_(schedule(s))
            opt.zero_grad(set_to_none=False)
            static_loss = loss_fn(train[b * a.batch:(b + 1) * a.batch], targets[b * a.batch:(b + 1) * a.batch])
            static_loss.backward()
            opt.step()
        torch.cuda.synchronize()
        train_s = time.time() - t0
    else:
        # warm up the compiled step on a side stream, then capture it
        static_x.copy_(train[: a.batch])
        static_t.copy_(targets[: a.batch])
        state = {k: v.clone() for k, v in model.state_dict().items()}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step()
        # restart from the init: parameters and the optimizer's state
        with torch.no_grad():
            model.load_state_dict(state)
            for st in opt.state.values():
                for key in ("exp_avg", "exp_avg_sq"):
                    st[key].zero_()
                st["step"].zero_()
        torch.cuda.synchronize()
        t0 = time.time()
        for s in range(a.steps):
            b = s % batches
            static_x.copy_(train[b * a.batch:(b + 1) * a.batch])
            static_t.copy_(targets[b * a.batch:(b + 1) * a.batch])
            lr.fill_(schedule(s))
            graph.replay()
        torch.cuda.synchronize()
        train_s = time.time() - t0
    trained_err = held_out_error(model.weight(), w, xh)
    out = {"w": a.w, "x": a.x, "rank": a.rank, "paths": a.paths, "steps": a.steps, "batch": a.batch, "lr": a.lr,
           "latent_rms": a.latent_rms, "eager": a.eager,
           "no_compile": a.no_compile,
           "sign_changes": int(sum(((t < 0) != s0).sum().item()
                                   for t, s0 in zip(list(model.lu) + list(model.lv), init_signs))),
           "init_error": init_err, "trained_error": trained_err, "init_s": init_s, "train_s": train_s,
           "last_loss": static_loss.item(), "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    print(json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("families")
    f.add_argument("--out", required=True)
    f.add_argument("--shape", default="3584x1024")
    f.add_argument("--tokens", type=int, default=32768)
    f.add_argument("--held-out", type=int, default=4096)
    f.add_argument("--rank", type=int, default=384)
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--family", default="default,exponential,planted")
    f.add_argument("--x-f16", action="store_true", help="write X as f16 (half the file)")
    f.add_argument("--spectrum-rank", type=int, default=0,
                   help="exponential: the s of exp(-i/(s/6)) (0: the rank); the files are then named exponential<s>")
    t = sub.add_parser("train")
    t.add_argument("--w", required=True)
    t.add_argument("--x", required=True)
    t.add_argument("--rank", type=int, required=True)
    t.add_argument("--paths", type=int, default=2)
    t.add_argument("--steps", type=int, default=2000)
    t.add_argument("--batch", type=int, default=4096)
    t.add_argument("--held-out", type=int, default=4096)
    t.add_argument("--warmup", type=int, default=50)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--eager", action="store_true", help="an eager loop (no torch.compile, no CUDA graph)")
    t.add_argument("--no-compile", action="store_true", help="capture the eager step in the CUDA graph")
    t.add_argument("--latent-rms", type=float, default=0.0,
                   help="latents scaled to this root-mean-square (0: U' and V' as they are)")
    a = p.parse_args()
    torch.manual_seed(0)
    cmd_families(a) if a.cmd == "families" else cmd_train(a)


if __name__ == "__main__":
    main()
