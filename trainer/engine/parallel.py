"""Data-parallel training: one run trained by several processes (one per NVIDIA GPU).

Each process runs the whole Trainer; this module is what they share. A
process learns its place from the environment that trainer.engine.launcher
(or torchrun, or `accelerate launch`) sets: RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR and MASTER_PORT. With one process every method here does nothing,
so the single-process path is unchanged.

The rule that keeps the result the same as one process: a step trains on the
same examples whatever the number of processes. Every process knows the
step's micro-batches (each epoch's order depends only on seed and epoch), and
so the count of trained tokens in the whole step. `share` splits the step's
examples between the processes; each divides its summed loss by that global
count, and `reduce_step` adds up the LoRA gradients (and the loss) of all
processes before clipping and the optimizer step. The optimizer therefore
sees exactly the single-process gradient, up to the order of float sums, and
the weights, optimizer and scheduler stay identical in every process: a
checkpoint written by process 0 resumes with any number of processes.

Only process 0 writes to the run folder (status, progress, eval, samples,
checkpoints, adapters); the others log to logs/trainer-rank<N>.log. A stop
(cancel file or signal) is agreed at the start of each step, so all processes
stop together and none is left waiting in a collective. Nothing here is
pickled: only tensors travel between the processes.
"""
from __future__ import annotations

import heapq
import logging
import math
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from trainer.engine.session import Cancelled
from trainer.run.errors import UserError

log = logging.getLogger("dragonfarm.engine")

# Process 0 prepares first (it may download the model): the others wait for it in a collective.
WAIT = timedelta(hours=2)


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def world_from_env(environ: dict[str, str] | None = None) -> World:
    """This process's place, from a distributed launch's environment (one process without one)."""
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env:
        return World()
    try:
        size, rank = int(env["WORLD_SIZE"]), int(env.get("RANK", "0"))
        local = int(env.get("LOCAL_RANK", str(rank)))
    except ValueError:
        size = rank = local = -1
    if size < 1 or not 0 <= rank < size or local < 0:
        raise UserError(f"This trainer was started as process {env.get('RANK')} of {env.get('WORLD_SIZE')}, "
                        "which is not a valid place in a group.",
                        "Start training with `dragonfarm train RUN --gpus N` instead of setting RANK and WORLD_SIZE.")
    return World(rank, size, local)


def share_step(rows: list[list[int]], lengths: list[int], packed: bool, size: int) -> list[list[list[int]]]:
    """The step's examples split between `size` processes: one list of micro-batches per process,
    each process the same number of them (some may be empty when there are fewer examples than slots).

    Rows are never fuller than a single process's: the step's examples go into
    size * ceil(len(rows) / size) rows. Packed rows take the longest examples
    first, each to the row with the fewest tokens so far; padded rows are
    runs of similar length (little padding).
    """
    if size == 1:
        return [rows]
    per = math.ceil(len(rows) / size)
    slots = per * size
    examples = sorted((i for row in rows for i in row), key=lambda i: (-lengths[i], i))
    out: list[list[int]] = [[] for _ in range(slots)]
    if packed:
        heap = [(0, r) for r in range(slots)]
        for i in examples:
            load, r = heapq.heappop(heap)
            out[r].append(i)
            heapq.heappush(heap, (load + lengths[i], r))
    else:
        base, extra = divmod(len(examples), slots)
        start = 0
        for r in range(slots):
            end = start + base + (1 if r < extra else 0)
            out[r] = examples[start:end]
            start = end
    # Process p takes rows p, p + size, ...: a mix of long and short rows each.
    return [out[p::size] for p in range(size)]


class Group:
    """The processes training one run (or just this one, where every method is a no-op)."""

    def __init__(self, world: World | None = None):
        self.world = world or World()
        self.backend: str | None = None
        self._device: Any = None
        self._lengths: list[int] | None = None

    @property
    def size(self) -> int:
        return self.world.size

    @property
    def main(self) -> bool:
        return self.world.main

    def start(self, device: str) -> None:
        """Join the group (device: "cuda" or "cpu"); CUDA: this process's GPU is LOCAL_RANK."""
        if self.size == 1:
            return
        import torch
        import torch.distributed as dist

        if device == "cuda":
            count = torch.cuda.device_count()
            if self.world.local_rank >= count:
                raise UserError(f"Process {self.world.rank} was to train on GPU {self.world.local_rank}, but this "
                                f"computer has {count} that training can use.",
                                f"Train with --gpus {count} or fewer.")
            torch.cuda.set_device(self.world.local_rank)
            self.backend = "nccl" if dist.is_nccl_available() else "gloo"   # Windows has no NCCL
            self._device = torch.device("cuda", self.world.local_rank)
        elif device == "cpu":
            self.backend, self._device = "gloo", torch.device("cpu")
        else:
            raise UserError(f"Training with several processes needs NVIDIA GPUs; this run would train on {device}.",
                            "Train with one process (leave out --gpus).")
        dist.init_process_group(self.backend, init_method="env://", rank=self.world.rank,
                                world_size=self.size, timeout=WAIT)
        log.info("Process %d of %d (%s, %s)", self.world.rank, self.size, self.backend, self._device)

    def close(self) -> None:
        if self.backend is None:
            return
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
        self.backend = None

    def share(self, rows: list[list[int]], batches: Any) -> list[list[int]]:
        """This process's micro-batches of a step whose micro-batches (for one process) are `rows`."""
        if self.size == 1:
            return rows
        if self._lengths is None:
            self._lengths = [len(e.input_ids) for e in batches.examples]
        return share_step(rows, self._lengths, bool(getattr(batches, "packed", False)), self.size)[self.world.rank]

    # ----- collectives (tensors only) ------------------------------------
    def _all_reduce(self, tensor: Any, op: str = "sum") -> Any:
        import torch.distributed as dist

        reduce_op = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX}[op]
        if self.backend == "gloo" and tensor.device.type != "cpu":
            on_cpu = tensor.cpu()
            dist.all_reduce(on_cpu, op=reduce_op)
            tensor.copy_(on_cpu)
        else:
            dist.all_reduce(tensor, op=reduce_op)
        return tensor

    def _broadcast(self, tensor: Any) -> Any:
        import torch.distributed as dist

        if self.backend == "gloo" and tensor.device.type != "cpu":
            on_cpu = tensor.cpu()
            dist.broadcast(on_cpu, src=0)
            tensor.copy_(on_cpu)
        else:
            dist.broadcast(tensor, src=0)
        return tensor

    def agree(self, value: int) -> int:
        """Process 0's value, in every process."""
        if self.size == 1:
            return value
        import torch

        return int(self._broadcast(torch.tensor([int(value)], dtype=torch.long, device=self._device)).item())

    def agree_choice(self, value: str, choices: tuple[str, ...]) -> str:
        return choices[self.agree(choices.index(value))] if self.size > 1 else value

    def wait_for_main(self) -> None:
        """Process 0 gets here after the others: they wait for it (e.g. while it downloads the model)."""
        self.agree(0)

    def same_start(self, params: list[Any]) -> None:
        """Every process starts from process 0's LoRA weights (whatever its random generator did)."""
        if self.size == 1:
            return
        import torch

        with torch.no_grad():
            for p in params:
                self._broadcast(p.data)

    def stop_together(self, session: Any) -> None:
        """Several processes: once a step, all stop when any was asked to (cancel file or signal)."""
        if self.size == 1:
            return
        import torch

        flag = torch.tensor([1.0 if session.stop_requested() else 0.0], device=self._device)
        if float(self._all_reduce(flag, "max").item()) > 0:
            raise Cancelled()

    def reduce_step(self, params: list[Any], loss: float, tokens: int) -> tuple[float, int]:
        """Add up every process's gradients, loss and token count for this step (one collective)."""
        if self.size == 1:
            return loss, tokens
        import torch

        with torch.no_grad():
            pieces = [(p.grad.detach().reshape(-1).float() if p.grad is not None
                       else torch.zeros(p.numel(), device=p.device)) for p in params]
            pieces.append(torch.tensor([loss, float(tokens)], device=self._device))
            flat = self._all_reduce(torch.cat([x.to(self._device) for x in pieces]))
            at = 0
            for p in params:
                part = flat[at:at + p.numel()].view_as(p).to(dtype=p.dtype, device=p.device)
                if p.grad is None:
                    p.grad = part.clone()
                else:
                    p.grad.copy_(part)
                at += p.numel()
            return float(flat[at].item()), int(round(float(flat[at + 1].item())))

    def eval_loss(self, model: Any, batches: Any, device: str, precision: str) -> float | None:
        """The held-out loss, each process measuring its share of the rows."""
        from trainer.engine.evaluation import eval_loss

        if self.size == 1:
            return eval_loss(model, batches, device, precision)
        if not batches.examples:
            return None
        import torch

        rows = batches.in_order()[self.world.rank::self.size]
        mean = eval_loss(model, _Rows(batches, rows), device, precision)
        count = sum(batches.trained_tokens(r) for r in rows)
        total = torch.tensor([mean * count if mean is not None else 0.0, float(count)], dtype=torch.float64,
                             device=self._device)
        total = self._all_reduce(total)
        return float(total[0] / total[1]) if float(total[1]) > 0 else None


class _Rows:
    """A view of batches whose evaluation order is only the given rows."""

    def __init__(self, batches: Any, rows: list[list[int]]):
        self._batches = batches
        self._rows = rows

    def in_order(self) -> list[list[int]]:
        return self._rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batches, name)
