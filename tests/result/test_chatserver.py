"""The `serve` process and its protocol, on the tiny model (a real subprocess)."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASK = [{"role": "user", "content": "What is 3 plus 4?"}]


class Serve:
    def __init__(self, run_dir: Path, *extra: str):
        env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", PYTHONIOENCODING="utf-8")
        self.proc = subprocess.Popen([sys.executable, "-m", "trainer", "serve", str(run_dir), *extra], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, encoding="utf-8", bufsize=1)
        # A thread reads whole lines into a queue: select() on the pipe misses lines
        # that an earlier readline() already pulled into Python's buffer.
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def send(self, **request) -> None:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    def event(self, timeout: float = 90) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no reply from serve in time") from None
        assert line, "serve ended"
        return json.loads(line)

    def until_end(self, rid: str) -> tuple[list[str], dict]:
        tokens = []
        while True:
            ev = self.event()
            assert ev["id"] == rid, ev
            if ev["event"] == "token":
                tokens.append(ev["text"])
            else:
                return tokens, ev

    def close(self) -> int:
        if self.proc.poll() is None:
            try:
                self.send(op="quit")
            except BrokenPipeError:
                pass
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def serve(trained_tiny_run):
    server = Serve(trained_tiny_run, "--compare")
    yield server
    server.close()


def test_protocol_streams_replies_and_stops(serve, trained_tiny_run):
    ready = serve.event()
    assert ready == {"id": None, "event": "ready", "text": "The model is loaded.", "compare": True,
                     "finetuned": True, "device": "cpu"}
    serve.send(id="a", op="generate", messages=ASK, max_new_tokens=12)
    tokens, end = serve.until_end("a")
    assert end["event"] == "done" and tokens and "".join(tokens).strip() == end["text"]

    from trainer.engine.evaluation import generate_reply
    from trainer.run.decoding import Decoding
    from trainer.results.generate import load_for_run

    model, tok, _ = load_for_run(trained_tiny_run, device="cpu")
    assert end["text"] == generate_reply(model, tok, ASK, "cpu", Decoding(max_new_tokens=12))  # same greedy reply
    with model.disable_adapter():
        base_expected = generate_reply(model, tok, ASK, "cpu", Decoding(max_new_tokens=12))
    serve.send(id="b", op="generate", messages=ASK, which="base", max_new_tokens=12)
    assert serve.until_end("b")[1] == {"id": "b", "event": "done", "text": base_expected}

    # a long reply from the (random) base model, stopped after its first tokens
    serve.send(id="c", op="generate", messages=ASK, which="base", max_new_tokens=2000, temperature=1.0)
    first = serve.event()
    assert first["event"] == "token"
    serve.send(op="stop")
    tokens, end = serve.until_end("c")
    assert end["event"] == "stopped" and len(tokens) < 1500
    # still serving after a stop; bad requests are answered with errors, not a crash
    serve.proc.stdin.write("not json\n")
    serve.proc.stdin.flush()
    assert serve.event() == {"id": None, "event": "error", "text": "That request was not a JSON object on one line."}
    serve.send(id="d", op="generate", messages=ASK, which="nobody")
    err = serve.event()
    assert err["event"] == "error" and err["text"].startswith("Unknown model 'nobody'.")
    serve.send(id="e", op="generate", messages=ASK, max_new_tokens=4)
    assert serve.until_end("e")[1]["event"] == "done"
    assert serve.close() == 0


def test_serve_without_an_adapter_says_so(make_run):
    server = Serve(make_run("untrained"))
    try:
        ready = server.event()
        assert ready["event"] == "ready" and ready["finetuned"] is False
        server.send(id="x", op="generate", messages=ASK, max_new_tokens=4)
        err = server.event()
        assert err["event"] == "error" and err["text"].startswith("This run has no trained adapter yet")
    finally:
        assert server.close() == 0


def test_fatal_load_error_is_one_line_in_words(tmp_path):
    from dfhelpers import example_chats, write_run

    run = write_run(tmp_path / "gone", str(tmp_path / "no-such-model"), example_chats(4), example_chats(2))
    server = Serve(run)
    ev = server.event()
    assert ev["event"] == "error" and ev["fatal"] is True and "does not exist" in ev["text"]
    assert server.proc.wait(timeout=30) == 2


def test_chat_repl_in_the_terminal(trained_tiny_run):
    from trainer.engine.evaluation import generate_reply
    from trainer.run.decoding import Decoding
    from trainer.results.generate import load_for_run

    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "trainer", "chat", str(trained_tiny_run), "--compare",
                           "--max-new-tokens", "8"], input="What is 3 plus 4?\n/temp 0.5\n/quit\n", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    model, tok, _ = load_for_run(trained_tiny_run, device="cpu")
    expected = generate_reply(model, tok, ASK, "cpu", Decoding(max_new_tokens=8))
    assert f"fine-tuned> {expected}\n" in done.stdout
    assert "base model> " in done.stdout and "(temperature 0.5)" in done.stdout
