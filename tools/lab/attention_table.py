#!/usr/bin/env python3
# attention_table.py DIR — the table of a device call's attention stage:
# DIR/attention-vkblr.json (vkblr-bench --json attention, any --block and
# --stats) beside DIR/attention-torch.json (attention-sdpa.py): per case
# and block, vkblr's forward and forward + backward TFLOP/s, its share of
# the best of PyTorch's forward + backward rates (over dtypes and ways),
# the milliseconds of each pass, and the kernels' register and shared
# memory statistics where the driver gave them. Where the call wrote them,
# DIR/attention-vkblr-plain.json (the plain kernel, ops-checks.sh),
# DIR/attention-vkblr-coopmat2.json (--kernel coopmat2) and
# DIR/attention-old.json (an older build's vkblr-bench, open-checks.sh)
# add their rows, the older build's marked "old".
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except (OSError, ValueError) as e:
        print(f"  {name}: {e}")
        return None
t = load("attention-torch.json")
# (file, label, required): the main run, then the optional ones where the call wrote them
sources = [("attention-vkblr.json", "", True), ("attention-vkblr-plain.json", "", False),
           ("attention-vkblr-coopmat2.json", "", False), ("attention-old.json", "old ", False)]
runs = [(load(f) or {}, label) for f, label, required in sources
        if required or os.path.exists(os.path.join(out, f))]
best = {}  # (B, T, H, KVH, D) -> PyTorch's best forward + backward TFLOP/s over dtypes and ways
for c in (t or {}).get("cases", []):
    key = (c["batch"], c["seq"], c["heads"], c["kv_heads"], c["head_dim"])
    rates = [c.get(f"{w}_step_tflops", 0) for w in ("eager", "compile", "graph")]
    best[key] = max(best.get(key, 0), *rates)
print(f"{'case':24s} {'kernel':8s} {'block':>8s} {'fwd TF':>7s} {'step TF':>7s} {'×SDPA':>6s}  ms per pass; registers")
rows = [(label, r) for run, label in runs for r in run.get("attention", [])]
for which, r in rows:
    key = (r["batch"], r["seq"], r["heads"], r["kv_heads"], r["head_dim"])
    name = which + "{},{},{},{},{}".format(*key)
    block = str(r.get("block", 0)) + {"on": "+pf", "off": "-pf"}.get(r.get("prefetch"), "")  # --prefetch
    if "error" in r:
        print(f"{name:24s} {r['kernel']:8s} {block:>8s} error: {r['error']}")
        continue
    ratio = r["step_tflops"] / best[key] if best.get(key) else float("nan")
    passes = " ".join(f"{k.removeprefix('attention_')} {ms:.3f}" for k, ms in sorted(r["per_name_ms"].items()))
    regs = " ".join(f"{k.removeprefix('attention_')}:" + ",".join(f"{n}={x}" for n, x in st.items() if "egister" in n
                    or "hared" in n) for k, st in sorted(r.get("kernel_stats", {}).items()))
    print(f"{name:24s} {r['kernel']:8s} {block:>8s} {r['forward_tflops']:7.1f} {r['step_tflops']:7.1f} "
          f"{ratio:6.2f}  {passes}; {regs}")
