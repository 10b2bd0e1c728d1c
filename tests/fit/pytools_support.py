"""Helpers of the tests of vkblr-fit's Python tools (tests/fit/pytools_*.py,
run by CTest; tests/CMakeLists.txt): the tools' folder on sys.path, checks
that collect failures, commands run with their output kept.

A test script reads its paths with options() and calls main({name:
function}): each function runs in turn, a failed check is printed with its
message, and the exit status is 0 when all passed, 1 otherwise, 77 (CTest's
SKIP_RETURN_CODE) when a Python module the test needs is not installed.
"""
import argparse
import importlib
import os
import subprocess
import sys
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(REPO, "tools", "vkblr-fit", "python")
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
SKIP = 77


class Failure(Exception):
    pass


def options():
    """The command line of every test script: --work DIR (made here), --fit (vkblr-fit),
    --read-back (vkblr-fit-read-back, tests/fit/read_back.cpp) and any --tool NAME=PATH (as
    .tool[NAME]); paths made absolute."""
    parser = argparse.ArgumentParser()
    for name in ("--work", "--fit", "--read-back"):
        parser.add_argument(name, required=True)
    parser.add_argument("--tool", action="append", default=[], help="NAME=PATH: another program a test runs")
    parsed = parser.parse_args()
    for name in ("work", "fit", "read_back"):
        setattr(parsed, name, os.path.abspath(getattr(parsed, name)))
    parsed.tool = {name: os.path.abspath(path) for name, _, path in (t.partition("=") for t in parsed.tool)}
    os.makedirs(parsed.work, exist_ok=True)
    return parsed


def require_modules(*names):
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            print(f"skipped: the Python module {name} is not installed")
            sys.exit(SKIP)


def check(condition, message):
    if not condition:
        raise Failure(message)


def run(command, expect_rc=0, cwd=None):
    """Runs `command` (a list), returns its CompletedProcess (text output); a Failure with its
    output when the exit status is not `expect_rc`."""
    p = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=600)
    check(p.returncode == expect_rc, f"{' '.join(map(str, command))}: exit {p.returncode} (want {expect_rc})\n"
          f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def raises(function, want_in_message, error=ValueError):
    """Calls function(); a Failure unless it raises `error` with `want_in_message` in its text.
    Returns the message."""
    try:
        function()
    except error as e:
        check(want_in_message in str(e), f"message '{e}' lacks '{want_in_message}'")
        return str(e)
    raise Failure(f"no {error.__name__} (want one with '{want_in_message}')")


def dense_tolerance(layer):
    """How far two f64 rebuilds of a blr layer's Ŵ (load_blr.BlrLayer) may differ, elementwise.
    Entry (i, j) is a sum over paths p and ranks k of ±h_i·ℓ_k·g_j: the products of f32 values
    round at most once each in f64, and any order of the r·P-term sum stays within γ(r·P + 2) of
    Σ|h_i·ℓ_k·g_j| from the exact value (γ(k) = k·u/(1 − k·u) ≤ 1.01·k·2⁻⁵³), so two rebuilds
    differ by at most twice that."""
    import numpy as np
    magnitude = sum(np.abs(p.h.astype(float))[:, None] * np.abs(p.g.astype(float)) * np.abs(p.l.astype(float)).sum()
                    for p in layer.paths)
    return 2 * 1.01 * (layer.rank * len(layer.paths) + 2) * 2.0**-53 * magnitude


def main(tests):
    failed = 0
    for name, test in tests.items():
        try:
            test()
            print(f"ok    {name}")
        except Failure as e:
            failed += 1
            print(f"FAIL  {name}: {e}")
        except Exception:  # a bug in the test or the tool: the traceback says where
            failed += 1
            print(f"FAIL  {name}:\n{traceback.format_exc()}")
    print(f"{len(tests) - failed} of {len(tests)} passed")
    sys.exit(1 if failed else 0)
