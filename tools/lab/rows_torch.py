#!/usr/bin/env python3
# rows_torch.py [--model NAME,...] [--op NAME,...] [--tokens N] — PyTorch's
# times for the cases of `vkblr-bench rows` (tools/vkblr-bench/rows_bench.hpp):
# the same models, ops, shapes, f32 data and byte counts, so the JSON of the
# two compares case by case. Each op is timed three ways on one CUDA GPU:
#   eager    the op as PyTorch runs it, `inner` calls between CUDA events
#   compile  torch.compile of the same function (Inductor fuses it)
#   graph    the eager calls captured in one CUDA graph (no launch overhead)
# plus `copy` (Tensor.copy_) of the case's largest tensor, the ceiling the
# bench compares with. Median of `reps` timings after warm-up. Prints one
# JSON object on stdout (progress on stderr).
#
# The backward ops are the gradients written out (what autograd computes for
# Hugging Face's LlamaRMSNorm in f32 and for silu(g)·u), so that each is
# timed alone; the embedding's backward is aten.embedding_dense_backward,
# what F.embedding's autograd calls.
import argparse, json, statistics, sys
import torch

MODELS = {  # name: hidden, heads, kv_heads, head_dim, inter, vocab, default tokens, sequence, RoPE base
    "ref": (512, 8, 4, 64, 1536, 272, 4 * 1024, 1024, 1e4),
    "qwen-0.5b": (896, 14, 2, 64, 4864, 151936, 4096, 4096, 1e6),
    "llama-8b": (4096, 32, 8, 128, 14336, 128256, 4096, 4096, 5e5),
}
OPS = ["rmsnorm_fwd", "rmsnorm_fwd_residual", "rmsnorm_bwd", "swiglu_fwd", "swiglu_bwd", "embedding_fwd",
       "embedding_bwd", "rope_fwd", "rope_bwd"]
EPS = 1e-6


def rmsnorm_fwd(x, w):
    inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
    return (x * inv) * w, inv


def rmsnorm_fwd_residual(x, stream, w):
    stream.add_(x)
    return rmsnorm_fwd(stream, w)


def rmsnorm_bwd(x, w, inv, dy):
    xh = x * inv
    gy = dy * w
    dx = (gy - xh * (gy * xh).mean(-1, keepdim=True)) * inv
    dw = (dy * xh).sum(0)
    return dx, dw


def swiglu_fwd(g, u):
    return torch.nn.functional.silu(g) * u


def swiglu_bwd(g, u, dh):
    s = torch.sigmoid(g)
    return dh * u * (s * (1 + g * (1 - s))), dh * (g * s)


def embedding_fwd(ids, table):
    return torch.nn.functional.embedding(ids, table)


def embedding_bwd(dy, ids, vocab):
    return torch.ops.aten.embedding_dense_backward(dy, ids, vocab, -1, False)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_fwd(q, k, cos, sin):
    """Hugging Face's apply_rotary_pos_emb: q, k [tokens][heads][head_dim], cos, sin [tokens][1][head_dim]."""
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rope_bwd(dq, dk, cos, sin):
    """The transpose: rotate_half's transpose is −rotate_half."""
    return dq * cos - rotate_half(dq * sin), dk * cos - rotate_half(dk * sin)


def case(op, m, tokens, dev):
    """(function of no arguments, compulsory bytes, elements of the copy it is compared with)."""
    hidden, heads, kv_heads, head_dim, inter, vocab, _, sequence, base = m
    th, ti, vh = tokens * hidden, tokens * inter, vocab * hidden
    r = lambda *s, scale=1.0: (torch.rand(*s, device=dev) * 2 - 1) * scale
    if op.startswith("rmsnorm"):
        x, w = r(tokens, hidden, scale=2.0), r(hidden)
        small = 4.0 * (hidden + tokens)
        if op == "rmsnorm_fwd":
            return (lambda: rmsnorm_fwd(x, w)), 8.0 * th + small, th
        if op == "rmsnorm_fwd_residual":
            stream = r(tokens, hidden, scale=2.0)
            return (lambda: rmsnorm_fwd_residual(x, stream, w)), 16.0 * th + small, th
        dy = r(tokens, hidden)
        _, inv = rmsnorm_fwd(x, w)
        return (lambda: rmsnorm_bwd(x, w, inv, dy)), 12.0 * th + small + 4.0 * hidden, th
    if op.startswith("swiglu"):
        g, u = r(tokens, inter, scale=4.0), r(tokens, inter, scale=2.0)
        if op == "swiglu_fwd":
            return (lambda: swiglu_fwd(g, u)), 12.0 * ti, ti
        dh = r(tokens, inter)
        return (lambda: swiglu_bwd(g, u, dh)), 20.0 * ti, ti
    if op.startswith("rope"):
        # cos and sin per token as HF's LlamaRotaryEmbedding makes them once per forward (not timed),
        # positions 0..sequence-1 per sequence
        pos = (torch.arange(tokens, device=dev) % sequence).double()
        inv_freq = base ** (-torch.arange(0, head_dim, 2, device=dev, dtype=torch.float64) / head_dim)
        ang = pos[:, None] * inv_freq[None, :]
        emb = torch.cat((ang, ang), dim=-1)
        cos, sin = emb.cos().float()[:, None, :], emb.sin().float()[:, None, :]
        q, k = r(tokens, heads, head_dim, scale=2.0), r(tokens, kv_heads, head_dim, scale=2.0)
        fn = rope_fwd if op == "rope_fwd" else rope_bwd
        nbytes = 8.0 * (q.numel() + k.numel()) + 8.0 * tokens + 4.0 * min(tokens, sequence) * head_dim
        return (lambda: fn(q, k, cos, sin)), nbytes, q.numel()
    # ids uniform over the vocabulary, a quarter of them one id (a long segment)
    ids = torch.randint(0, vocab, (tokens,), device=dev)
    ids[torch.rand(tokens, device=dev) < 0.25] = 13 % vocab
    if op == "embedding_fwd":
        table = torch.full((vocab, hidden), 1.2345, device=dev)
        return (lambda: embedding_fwd(ids, table)), 4.0 * tokens + 8.0 * th, th
    dy = r(tokens, hidden)
    return (lambda: embedding_bwd(dy, ids, vocab)), 4.0 * th + 4.0 * (vocab + 1) + 4.0 * tokens + 4.0 * vh, vh


def time_ms(fn, reps, inner, graph):
    if graph:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(inner):
                fn()
        run = g.replay
    else:
        def run():
            for _ in range(inner):
                fn()
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) / inner)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=",".join(MODELS))
    ap.add_argument("--op", default=",".join(OPS))
    ap.add_argument("--tokens", type=int, default=0, help="tokens per batch (default: the model's)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--inner", type=int, default=10, help="calls per timing")
    a = ap.parse_args()
    dev = "cuda"
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    copy_gbps = {}
    for name in a.model.split(","):
        m = MODELS[name]
        tokens = a.tokens or m[6]
        for op in a.op.split(","):
            fn, nbytes, copy_n = case(op, m, tokens, dev)
            res = {"model": name, "op": op, "tokens": tokens, "bytes": nbytes}
            for mode in ("eager", "compile", "graph"):
                try:
                    f = torch.compile(fn) if mode == "compile" else fn
                    ms = time_ms(f, a.reps, a.inner, graph=(mode == "graph"))
                    res[mode] = {"median_ms": ms, "gbps": nbytes / (ms * 1e-3) / 1e9}
                except Exception as e:  # noqa: BLE001 — report and go on
                    res[mode] = {"error": f"{type(e).__name__}: {e}"}
            torch.compiler.reset()
            if copy_n not in copy_gbps:
                src = torch.full((copy_n,), 1.2345, device=dev)
                dst = torch.empty_like(src)
                ms = time_ms(lambda: dst.copy_(src), a.reps, a.inner, graph=True)
                copy_gbps[copy_n] = 8.0 * copy_n / (ms * 1e-3) / 1e9
                del src, dst
            res["copy_elements"] = copy_n
            res["copy_gbps"] = copy_gbps[copy_n]
            out["rows"].append(res)
            print(f"{name} {op}: " + ", ".join(
                f"{k} {res[k]['gbps']:.0f} GB/s" if "gbps" in res[k] else f"{k} {res[k]['error']}"
                for k in ("eager", "compile", "graph")) + f", copy {res['copy_gbps']:.0f} GB/s",
                file=sys.stderr, flush=True)
            torch.cuda.empty_cache()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
