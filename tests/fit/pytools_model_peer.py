"""The whole-model peer (tools/lab/qat_peer.py) at toy size on the CPU: a
smoke test of the same blr structure trained inside the reference model.

    python3 pytools_model_peer.py --work DIR --fit VKBLR_FIT --read-back VKBLR_FIT_READ_BACK

Checks: its rank rule is vkblr-fit's (hand-computed ranks at 1 bpw, the
too-low bound); compiled through dynamo and AOTAutograd (--compile aot-eager,
the compiled step's autograd without inductor, which needs a compiler set-up
the dev root lacks) the straight-through signs still flip, about as often as
eagerly, every timed run flips signs and its report holds the per-step flips,
the curve against tokens and the whole model's bits (those of vkblr-fit's
layers of the same ranks); started from a vkblr-fit model file, its model
before any step is the swapped-in model evaluate.py measures.
"""
import json
import os
import sys

from pytools_support import REPO, check, main, options, raises, require_modules, run

require_modules("numpy", "torch")
sys.path.insert(0, os.path.join(REPO, "tools", "lab"))
sys.path.insert(0, os.path.join(REPO, "tools", "model"))
from model_fixture import make_fake_deb  # noqa: E402
from qat_peer import rank_for_bpw  # noqa: E402

args = options()
WORK = args.work
CORPUS, REF = os.path.join(WORK, "corpus"), os.path.join(WORK, "ref")


def tool(path, *arguments):
    return run([sys.executable, os.path.join(REPO, path), *arguments], cwd=WORK)


def peer(out, *arguments):
    return tool("tools/lab/qat_peer.py", "--model", REF, "--corpus", CORPUS, "--out", out, "--device", "cpu",
                "--train-tokens", "576", "--eval-documents", "2", *arguments)


def load_json(path):
    with open(os.path.join(WORK, path)) as f:
        return json.load(f)


def setup():
    tool("tools/model/make_corpus.py", "--deb", make_fake_deb(WORK), "--out", CORPUS, "--min-total-bytes", "1000",
         "--held-out-bytes", "20000")
    tool("tools/model/train_reference.py", "--corpus", CORPUS, "--out", REF, "--preset", "toy", "--steps", "20",
         "--eval-documents", "2")
    tool("tools/model/layerwise.py", "--model", REF, "--corpus", CORPUS, "--fit", args.fit, "--out", "oneshot",
         "--set", "rank=32", "--set", "steps=3", "--batch", "64", "--eval-documents", "2")
    peer("compiled.json", "--rank", "32", "--steps", "8", "--eval-every", "4", "--lr", "1e-3,3e-3", "--compile",
         "aot-eager", "--flip-check", "3", "--require-flips")
    peer("from-blr.json", "--from-blr", "oneshot/blr.safetensors", "--steps", "1", "--eval-every", "1")


def test_the_rank_rule_is_vkblr_fits():
    # bits(r) = 2·r·(m + n) + 16·2·(m + n + r) + 128 ≤ m·n at 1 bpw, r a multiple of 32
    for m, n, want in [(512, 512, 96), (256, 512, 64), (1536, 512, 160), (512, 1536, 160)]:
        check(rank_for_bpw(m, n, 2, 1.0) == want, f"{m}x{n} at 1 bpw: rank {rank_for_bpw(m, n, 2, 1.0)}, want {want}")
    raises(lambda: rank_for_bpw(256, 512, 2, 0.1), "rank 32 takes 0.5713 bpw")  # vkblr-fit's own figure


def test_the_compiled_step_trains_the_signs():
    r = load_json("compiled.json")
    eager, compiled = sum(r["flip_check"]["eager"]), sum(r["flip_check"]["compiled"])
    check(eager > 0 and abs(compiled - eager) <= 0.1 * eager, f"flip check: eager {eager}, compiled {compiled}")
    check(len(r["runs"]) == 2, f"{len(r['runs'])} runs for two learning rates")
    for run_ in r["runs"]:
        check(len(run_["flips_per_step"]) == 8 and run_["flips"] == sum(run_["flips_per_step"]) > 0,
              f"lr {run_['lr']}: flips {run_['flips_per_step']}")
        check([p["step"] for p in run_["curve"]] == [0, 4, 8] and run_["curve"][-1]["tokens"] == 8 * 8 * 64,
              f"lr {run_['lr']}: curve {[(p['step'], p['tokens']) for p in run_['curve']]}")
    best = min(r["runs"], key=lambda x: x["final"]["bits_per_byte"])
    check(r["best"]["lr"] == best["lr"], "the best run is not the lowest bits per byte")
    check(r["model_bits"] == load_json("oneshot/report.json")["model_bits"],
          "the peer's rank-32 layers do not take the bits of vkblr-fit's")


def test_a_start_from_a_vkblr_fit_file_is_that_model():
    start = load_json("from-blr.json")["init"]
    swapped = load_json("oneshot/report.json")["evaluation"]["blr"]
    check(start["tokens_scored"] == swapped["tokens_scored"], "other tokens")
    check(abs(start["loss_nats"] - swapped["loss_nats"]) <= 1e-7 * swapped["loss_nats"],
          f"the peer's start {start['loss_nats']!r}, the swapped-in model {swapped['loss_nats']!r}")


setup()
main({name: f for name, f in globals().items() if name.startswith("test_")})
