"""dump_calibration.py's parts: the row sampler is Algorithm R, its module
patterns follow the manifest's rule, and bad inputs are refused with a
message that names them (the whole dump runs in pytools_torch_roundtrip.py).

    python3 pytools_dump.py --work DIR --fit VKBLR_FIT --read-back VKBLR_FIT_READ_BACK
"""
import contextlib
import io
import os
import sys

from pytools_support import TOOLS, check, main, options, raises, require_modules, run

require_modules("numpy", "torch")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import tiny_torch_model  # noqa: E402
from dump_calibration import RowSampler, dump_calibration, name_matcher  # noqa: E402
from dump_calibration import main as dump_main  # noqa: E402
from torch_model import load_batches, load_model  # noqa: E402

args = options()


def stream(sizes, width=3):
    """Blocks of the given row counts; row t holds t in every column."""
    start = np.cumsum([0] + sizes)
    return [torch.arange(a, b, dtype=torch.float32)[:, None].repeat(1, width) for a, b in zip(start, start[1:])]


def test_sampler_is_algorithm_r():
    """The same draws, applied one row at a time as in the textbook algorithm (row t replaces
    slot j = draw when j < capacity), keep the same rows; returned in stream order."""
    sizes = [3, 7, 1, 20, 5, 40]  # the reservoir fills inside the second block
    for seed in range(20):
        sampler = RowSampler(8, 3, torch.float32, seed)
        for block in stream(sizes):
            sampler.add(block)
        rng, seen, reference = np.random.default_rng(seed), 0, []
        for k in sizes:
            fill = max(0, min(k, 8 - seen))
            reference += range(seen, seen + fill)
            later = np.arange(seen + fill, seen + k)
            if later.size:
                for t, j in zip(later, rng.integers(0, later + 1)):
                    if j < 8:
                        reference[j] = int(t)
            seen += k
        got = sampler.rows()[:, 0].int().tolist()
        check(got == sorted(reference), f"seed {seed}: kept {got}, Algorithm R keeps {sorted(reference)}")


def test_sampler_keeps_every_row_equally_often():
    """Over 4000 seeds each of 40 rows is kept with probability 10/40: 1000 times, give or take
    five standard deviations (√(4000·¼·¾) ≈ 27)."""
    counts = np.zeros(40)
    for seed in range(4000):
        sampler = RowSampler(10, 1, torch.float32, seed)
        for block in stream([4, 13, 23], 1):
            sampler.add(block)
        counts[sampler.rows()[:, 0].long().numpy()] += 1
    check(np.all(np.abs(counts - 1000) < 5 * 27.4), f"rows kept {counts.min()} to {counts.max()} times")


def test_patterns_follow_the_manifest():
    match = name_matcher("model.layers.*.mlp.*_proj")
    check(match("model.layers.10.mlp.up_proj") and match("model.layers.1.2.mlp.x.y_proj"), "'*' must span dots")
    check(not match("model.layers.1.mlp.up_proj.lora") and not match("xmodel.layers.1.mlp.up_proj"),
          "the whole name must match")
    check(name_matcher("a+b(c)")("a+b(c)") and not name_matcher("a.b")("axb"), "only '*' is special")


def test_bad_inputs_are_refused():
    model, out = tiny_torch_model.make(), os.path.join(args.work, "refused")
    inputs, lines = tiny_torch_model.make_inputs(), []

    def dump(batches=inputs, **kwargs):
        dump_calibration(model, batches, out, say=lines.append, **kwargs)
    raises(lambda: dump(batch=512), "layer blocks.0.up saw 768 tokens: vkblr-fit needs at least two batches of 512")
    raises(lambda: dump(layers="nothing.*"), "no nn.Linear of the model matches ['nothing.*']")
    raises(lambda: dump(layers="head"), "no nn.Linear")
    check(lines[-1] == "head: left out: 40x64 (out x in) is not a multiple of 16 both ways", f"said {lines}")
    raises(lambda: dump(batch=64, max_tokens=100), "max_tokens 100: below two batches of 64")
    raises(lambda: dump(batch=64, settings={"tokens": 64}), "setting ['tokens']")
    raises(lambda: dump([torch.full((1, 96, 64), 1e5)], batch=32),
           "layer blocks.0.up: an input of |value| 1e+05 overflows torch.float16")
    raises(lambda: dump([torch.full((1, 96, 64), float("nan"))], batch=32), "layer blocks.0.up: its input holds NaN")
    check(not os.path.exists(out), "a refused dump wrote files")


def test_models_and_batches_load_from_files():
    """A torch.save'd module (its class importable: tiny_torch_model is on sys.path); a tensor in
    a .pt or .npy file, cut into batches of --rows."""
    model_file, pt, npy = (os.path.join(args.work, n) for n in ("model.pt", "x.pt", "x.npy"))
    torch.save(tiny_torch_model.make(), model_file)
    loaded, made = load_model(model_file).state_dict(), tiny_torch_model.make().state_dict()
    check(loaded.keys() == made.keys() and all(torch.equal(loaded[k], made[k]) for k in made),
          "the saved model loads with other weights")
    x = torch.arange(10.0).reshape(5, 2)
    torch.save(x, pt)
    np.save(npy, x.numpy())
    for spec in (pt, npy):
        batches = load_batches(spec, 2)
        check([b.shape[0] for b in batches] == [2, 2, 1] and torch.equal(torch.cat(batches), x),
              f"{spec} in batches of 2: {batches}")
    raises(lambda: load_model(pt), "is a Tensor, not a torch.nn.Module")


def test_command_line_messages():
    """--help through the interpreter; the refusals through main() in this process (each start
    of an interpreter imports torch again: seconds)."""
    p = run([sys.executable, os.path.join(TOOLS, "dump_calibration.py"), "--help"])
    check("--max-tokens" in p.stdout and "Hugging Face" in p.stdout, f"--help:\n{p.stdout}")
    model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_torch_model.py")
    cases = [(["--model", "missing.py:make"], 1, "dump_calibration: model 'missing.py:make': missing.py does not exist"),
             (["--model", model + ":nope"], 1, "has no function 'nope'"),
             (["--inputs", "x.txt"], 1, "inputs 'x.txt' does not exist"),
             (["--inputs", model], 1, "want a .pt (torch.save) or .npy file, or MODULE:FACTORY"),
             (["--inputs", model + ":make"], 1, "a Tiny; want a tensor or a non-empty list of batches"),
             (["--set", "bpw"], 2, "'bpw': want KEY=VALUE")]
    for arguments, want_rc, want in cases:
        command = ["--model", model + ":make", "--inputs", "x.pt", "--out", os.path.join(args.work, "o")] + arguments
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            try:
                rc = dump_main(command)
            except SystemExit as e:  # argparse's usage errors
                rc = e.code
        check(rc == want_rc and want in stderr.getvalue(), f"{arguments}: exit {rc}, stderr {stderr.getvalue()}")


main({name: f for name, f in globals().items() if name.startswith("test_")})
