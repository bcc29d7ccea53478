"""A stand-in for `python -m trainer serve`: speaks docs/chat-protocol.md without a model.

Started as `fake_chat_model.py -m trainer serve RUN_DIR [--compare]` (the
arguments trainer_command adds are ignored). A reply is "<which> says: <last
user message>" word by word; the prompt "long" gives an endless-looking reply
(stop it with {"op": "stop"}), "fail" gives an error event and "crash" ends the process.
"""
from __future__ import annotations

import json
import sys
import threading
import time

lock = threading.Lock()
stop_upto = 0
seq = 0
requests: list = []
cond = threading.Condition()


def send(**event) -> None:
    with lock:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def reader() -> None:
    global stop_upto, seq
    for line in sys.stdin:
        request = json.loads(line)
        with cond:
            if request.get("op") in ("stop", "quit"):
                stop_upto = seq
                if request["op"] == "quit":
                    break
            else:
                seq += 1
                request["_seq"] = seq
                requests.append(request)
            cond.notify()
    with cond:
        requests.append(None)
        cond.notify()


def main() -> None:
    threading.Thread(target=reader, daemon=True).start()
    send(id=None, event="ready", text="The model is loaded.", compare=True, finetuned=True, device="fake")
    while True:
        with cond:
            while not requests:
                cond.wait()
            request = requests.pop(0)
        if request is None:
            return
        rid, text = request["id"], request["messages"][-1]["content"]
        if text == "crash":
            sys.stderr.write("Segmentation fault (pretend)\n")
            sys.stderr.flush()
            import os

            os._exit(3)
        if text == "fail":
            send(id=rid, event="error", text="The fake model cannot answer that.")
            continue
        words = [f"{request.get('which', 'finetuned')} says:"] + (["la"] * 2000 if text == "long" else text.split())
        out = []
        for i, word in enumerate(words):
            if request["_seq"] <= stop_upto:
                send(id=rid, event="stopped", text=" ".join(out))
                break
            piece = word if i == 0 else " " + word
            out.append(word)
            send(id=rid, event="token", text=piece)
            time.sleep(0.02)
        else:
            send(id=rid, event="done", text=" ".join(out))


if __name__ == "__main__":
    main()
