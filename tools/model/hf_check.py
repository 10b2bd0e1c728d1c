#!/usr/bin/env python3
"""Checks a reference checkpoint against Hugging Face's own classes: that
transformers' LlamaForCausalLM loads it and computes the same logits as
llama.py, and that AutoTokenizer loads its tokenizer files and gives the ids
of byte_tokenizer.encode.

    python3 tools/model/hf_check.py --model DIR --corpus .corpus [--windows 4]
        [--documents 20] [--device cpu] [--json OUT]

Logits: --windows held-out windows of the model's context, f32, both models
on --device; passes when the largest difference is at most 1e-4 of the
largest logit. Tokenizer: the first --documents held-out documents (and a
text of non-ASCII characters and control bytes): encode(text) equals
byte_tokenizer.encode(text) (add_special_tokens=False), and decode gives the
text back; a document that holds "<|endoftext|>" literally is reported
apart (there the library splits the special token out, by design).

Needs transformers and tokenizers (the GPU machine has them; Debian 13 does
not package them): without them it says so and exits 77. Exit 1 when a
check fails, 0 when all pass.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from atomic_file import write_json_atomic  # noqa: E402
from byte_tokenizer import EOT_TEXT, encode  # noqa: E402
from checkpoint import load_checkpoint  # noqa: E402
from corpus import read_documents  # noqa: E402
from token_data import split_stream, sample_windows  # noqa: E402


def main(argv=None) -> int:
    first, _, rest = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(description=first, epilog=rest,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    try:
        import transformers
        from transformers import AutoTokenizer, LlamaForCausalLM
    except ImportError as e:
        print(f"hf_check: skipped: {e}")
        return 77
    result, failed = {"transformers": transformers.__version__}, []
    ours = load_checkpoint(args.model).to(args.device)
    theirs = LlamaForCausalLM.from_pretrained(args.model, torch_dtype=torch.float32).to(args.device).eval()
    stream, _, _ = split_stream(args.corpus, "heldout")
    windows = sample_windows(stream, args.windows, ours.config.max_position_embeddings, 7).to(args.device)
    with torch.no_grad():
        a = ours(windows).float()
        b = theirs(input_ids=windows).logits.float()
    diff = float((a - b).abs().max() / a.abs().max())
    result["logits_max_relative_difference"] = diff
    if not diff <= 1e-4:
        failed.append(f"logits differ by {diff:.3g} of the largest")
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    texts = [t for _, t in read_documents(args.corpus, "heldout")[:args.documents]]
    texts.append("Café — naïve\n\ttabs\x00\x7f ✓ 𝄞 \u00a0end")
    literal = [t for t in texts if EOT_TEXT in t]
    mismatched = 0
    for text in texts:
        if EOT_TEXT in text:
            continue
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if ids != encode(text) or tokenizer.decode(ids) != text:
            mismatched += 1
    result.update({"tokenizer_texts": len(texts), "tokenizer_mismatched": mismatched,
                   "texts_with_literal_special_token": len(literal),
                   "eos_token_id": tokenizer.eos_token_id, "tokenizer_length": len(tokenizer)})
    if mismatched:
        failed.append(f"{mismatched} of {len(texts) - len(literal)} texts encode or decode differently")
    if tokenizer.eos_token_id != 256 or tokenizer.convert_tokens_to_ids(EOT_TEXT) != 256:
        failed.append(f"<|endoftext|> is id {tokenizer.convert_tokens_to_ids(EOT_TEXT)}, want 256")
    result["failed"] = failed
    if args.json:
        write_json_atomic(args.json, result)
    print(f"hf_check: transformers {transformers.__version__}: logits within {diff:.3g} of the largest; tokenizer "
          f"{len(texts) - len(literal) - mismatched} of {len(texts) - len(literal)} texts the same ids and text"
          + ("".join(f"\nhf_check: FAILED: {f}" for f in failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
