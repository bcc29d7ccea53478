"""`python -m trainer serve RUN_DIR [--compare]`: the model process behind the Try page.

Loads the fine-tuned model once (the base model is the same weights with the
adapter switched off, so --compare costs no extra memory) and speaks the
line-based JSON protocol in docs/chat-protocol.md over stdin/stdout. A reader
thread takes requests off stdin, so a stop request reaches a reply that is
being written; replies stream token by token.
"""
from __future__ import annotations

import contextlib
import json
import queue
import sys
import threading
from pathlib import Path
from typing import Any, Callable, TextIO

from trainer.engine.decoding import generate_kwargs
from trainer.run.decoding import Decoding
from trainer.run.errors import UserError

MAX_NEW_TOKENS = 2048
WHICH = ("finetuned", "base")


class ChatEngine:
    """One loaded model that can answer as the fine-tuned or the base model."""

    def __init__(self, model: Any, tokenizer: Any, device: str, has_adapter: bool):
        self.model, self.tokenizer, self.device, self.has_adapter = model, tokenizer, device, has_adapter

    @classmethod
    def load(cls, run_dir: str | Path, last: bool = False) -> "ChatEngine":
        from trainer.run.reader import Run
        from trainer.results.generate import load_for_run

        has_adapter = Run(run_dir).has_adapter()
        model, tokenizer, device = load_for_run(run_dir, base=not has_adapter, last=last)
        return cls(model, tokenizer, device, has_adapter)

    def _context(self, which: str) -> Any:
        if which == "base" and self.has_adapter:
            return self.model.disable_adapter()
        return contextlib.nullcontext()

    def stream(self, messages: list[dict[str, str]], which: str = "finetuned", decoding: Decoding | None = None,
               should_stop: Callable[[], bool] = lambda: False,
               on_text: Callable[[str], None] = lambda _t: None) -> tuple[str, bool]:
        """Generate one reply, decoded the shared way (trainer.run.decoding), calling on_text
        for each new piece; (reply, stopped)."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        if which not in WHICH:
            raise UserError(f"Unknown model '{which}'.", "Use 'finetuned' or 'base'.")
        if which == "finetuned" and not self.has_adapter:
            raise UserError("This run has no trained adapter yet, so only the base model can answer.",
                            "Train the run first, or ask the base model.")
        tok = self.tokenizer
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        enc = tok(text, add_special_tokens=False, return_tensors="pt").to(self.device)
        streamer = TextIteratorStreamer(tok, skip_prompt=True, skip_special_tokens=True, timeout=None)

        class Stop(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.full((input_ids.shape[0],), bool(should_stop()), dtype=torch.bool,
                                  device=input_ids.device)

        decoding = (decoding or Decoding()).clamped()
        decoding = decoding.with_changes(max_new_tokens=min(decoding.max_new_tokens, MAX_NEW_TOKENS))
        kwargs: dict[str, Any] = dict(enc, **generate_kwargs(self.model, tok, decoding), streamer=streamer,
                                      stopping_criteria=StoppingCriteriaList([Stop()]))
        failure: list[BaseException] = []

        def work() -> None:
            try:
                with torch.no_grad(), self._context(which):
                    self.model.generate(**kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                failure.append(exc)
                streamer.end()

        thread = threading.Thread(target=work, name="dragonfarm-generate", daemon=True)
        thread.start()
        pieces = []
        for piece in streamer:
            if piece:
                pieces.append(piece)
                on_text(piece)
        thread.join()
        if failure:
            raise failure[0]
        return "".join(pieces).strip(), bool(should_stop())


class Server:
    """The protocol loop: a reader thread for stdin, replies written one JSON line each."""

    def __init__(self, engine: ChatEngine, out: TextIO, compare: bool = False):
        self.engine, self.out, self.compare = engine, out, compare
        self.requests: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.seq = 0          # requests taken in
        self.stop_upto = 0    # every generate request up to this number is stopped

    def send(self, **event: Any) -> None:
        line = json.dumps(event, ensure_ascii=False)
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()

    def read(self, source: TextIO) -> None:
        for line in source:
            line = line.strip()
            if not line:
                continue
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("not an object")
            except ValueError:
                self.send(id=None, event="error", text="That request was not a JSON object on one line.")
                continue
            op = request.get("op")
            if op == "stop":
                with self.lock:
                    self.stop_upto = self.seq
            elif op == "quit":
                with self.lock:
                    self.stop_upto = self.seq
                break
            else:
                with self.lock:
                    self.seq += 1
                    request["_seq"] = self.seq
                self.requests.put(request)
        self.requests.put(None)

    def serve(self, source: TextIO) -> None:
        reader = threading.Thread(target=self.read, args=(source,), name="dragonfarm-stdin", daemon=True)
        reader.start()
        self.send(id=None, event="ready", text="The model is loaded.", compare=self.compare,
                  finetuned=self.engine.has_adapter, device=self.engine.device)
        while True:
            request = self.requests.get()
            if request is None:
                return
            self.handle(request)

    def handle(self, request: dict[str, Any]) -> None:
        rid, seq = request.get("id"), request["_seq"]
        if request.get("op") != "generate":
            self.send(id=rid, event="error", text=f"Unknown request '{request.get('op')}'.")
            return
        stopped = lambda: seq <= self.stop_upto  # noqa: E731
        if stopped():
            self.send(id=rid, event="stopped", text="")
            return
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            self.send(id=rid, event="error", text="The request has no messages to answer.")
            return
        try:
            reply, was_stopped = self.engine.stream(
                messages, which=request.get("which", "finetuned"), decoding=Decoding.from_request(request),
                should_stop=stopped,
                on_text=lambda piece: self.send(id=rid, event="token", text=piece))
        except UserError as exc:
            self.send(id=rid, event="error", text=str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - one failed reply does not end the process
            self.send(id=rid, event="error", text=f"The model could not answer: {type(exc).__name__}: {exc}")
            return
        self.send(id=rid, event="stopped" if was_stopped else "done", text=reply)


def main(run_dir: str | Path, compare: bool = False, last: bool = False) -> int:
    """Entry point of `serve`: stdout carries only protocol lines."""
    for stream in (sys.stdin, sys.stdout):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(encoding="utf-8")
    out = sys.stdout
    sys.stdout = sys.stderr  # anything else printed (warnings, progress bars) goes to stderr
    try:
        engine = ChatEngine.load(run_dir, last=last)
    except Exception as exc:  # noqa: BLE001 - the app shows this line to the person
        text = str(exc) if isinstance(exc, UserError) else f"The model could not be loaded: {type(exc).__name__}: {exc}"
        out.write(json.dumps({"id": None, "event": "error", "text": text, "fatal": True}) + "\n")
        out.flush()
        return 2
    Server(engine, out, compare).serve(sys.stdin)
    return 0
