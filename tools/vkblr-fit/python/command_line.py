"""What the command lines of dump_calibration.py and load_blr.py share: a
parser whose help is the script's docstring, the arguments that name a
model and its batches (torch_model.py reads them), and one way to fail.
"""
from __future__ import annotations

import argparse
import sys


def parser_from_doc(doc: str) -> argparse.ArgumentParser:
    """--help prints the docstring: its first paragraph, the arguments, then the rest."""
    first, _, rest = doc.partition("\n\n")
    return argparse.ArgumentParser(description=first, epilog=rest,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def add_model_arguments(parser: argparse.ArgumentParser, required: bool, inputs_help: str) -> None:
    parser.add_argument("--model", required=required, help="file.py:FACTORY, package.module:FACTORY or model.pt")
    parser.add_argument("--inputs", required=required, help=inputs_help + ": .pt (a tensor or a list of batches), "
                        ".npy or file.py:FACTORY")
    parser.add_argument("--rows", type=int, help="cut an inputs tensor into batches of ROWS along dim 0 "
                        "(default: one batch)")


def run(name: str, body) -> int:
    """body()'s exit status 0; 1 with "name: message" on stderr when it raises ValueError
    (the tools' errors) or OSError (files)."""
    try:
        body()
    except (ValueError, OSError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1
    return 0
