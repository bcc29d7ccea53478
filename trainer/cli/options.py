"""Command-line options shared by several sub-commands."""
from __future__ import annotations

import argparse

from trainer.run.decoding import DEFAULT_REPETITION_PENALTY, HELP, LIMITS, Decoding


def add_decoding_arguments(p: argparse.ArgumentParser, max_new_tokens: int) -> None:
    """--temperature, --repetition-penalty and --max-new-tokens, the same for generate and chat."""
    low, high = LIMITS["temperature"]
    p.add_argument("--temperature", type=float, default=0.0, help=f"{HELP['temperature']} ({low:g} to {high:g})")
    low, high = LIMITS["repetition_penalty"]
    p.add_argument("--repetition-penalty", type=float, default=None,
                   help=f"{HELP['repetition_penalty']} ({low:g} to {high:g}; default: the model's own, "
                        f"else {DEFAULT_REPETITION_PENALTY:g})")
    p.add_argument("--max-new-tokens", type=int, default=max_new_tokens, help="the longest reply, in tokens")


def decoding_from_args(args: argparse.Namespace) -> Decoding:
    return Decoding().with_changes(temperature=args.temperature, repetition_penalty=args.repetition_penalty,
                                   max_new_tokens=args.max_new_tokens)
