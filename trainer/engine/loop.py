"""The training engine: `train(run_dir)` does one whole run (or resumes one)."""
from __future__ import annotations

import json
import logging
import math
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from trainer.run import status as st
from trainer.run.decoding import DEFAULT as DEFAULT_DECODING
from trainer.run.files import EVAL_FILE, STATUS_FILE
from trainer.engine.awake import keep_awake
from trainer.engine.best import BestKeeper
from trainer.engine.checkpoint import (latest_checkpoint, load_checkpoint, old_format_checkpoint, save_adapter,
                                       save_checkpoint, set_aside_previous)
from trainer.run.config import PRECISIONS, TrainConfig, default_eval_every, effective_epochs
from trainer.engine.encode import read_chats
from trainer.engine.prepare import keep_what_was_there, prepare
from trainer.engine.evaluation import autocast, generate_replies, loss_record, per_example_scale, summed_loss
from trainer.engine.samples import add_replies, has_questions, load_best_adapter, write_questions
from trainer.run.progress import ProgressWriter, trim_progress
from trainer.engine.parallel import Group, World, world_from_env
from trainer.engine.session import Cancelled, FollowerSession, RunSession
from trainer.engine.threads import wait_briefly
from trainer.run.errors import UserError
from trainer.run.lock import LockHeld, TrainerLock

log = logging.getLogger("dragonfarm.engine")

# Resume with nothing to resume from (the run stopped before its first save)
# starts again: there is no other way forward, and the page and CLI say so.
NO_CHECKPOINT_RESTART = "No checkpoint was saved before the run stopped, so it starts again from the beginning."


def train(run_dir: str | Path, resume: bool = False, verbose: bool = True) -> str:
    """Run training in this process; returns the final state."""
    # Ops that Apple's GPU lacks run on the CPU instead of failing (read when torch loads).
    os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")
    wait_briefly()  # CPU threads spin only briefly while waiting (trainer.engine.threads)
    run_dir = Path(run_dir).resolve()
    config = TrainConfig.load(run_dir)  # a bad config (or no run folder) fails before we touch the folder
    world = world_from_env()  # one of several data-parallel processes? (trainer.engine.parallel)
    if not world.main:
        return _follow(run_dir, config, resume, verbose, world)
    with hold_trainer_lock(run_dir):  # one trainer per run folder, however it is started
        return _train_locked(run_dir, config, resume, verbose, world)


@contextmanager
def hold_trainer_lock(run_dir: Path) -> Iterator[None]:
    """The run's OS-level trainer lock for the life of this training; a held lock is a
    plain UserError, before anything in the folder is read or written."""
    try:
        lock = TrainerLock(run_dir).acquire()
    except LockHeld:
        raise UserError(f"The run {run_dir.name} is already training in another process.",
                        f"Wait for it, or stop it with: dragonfarm cancel {run_dir}") from None
    except OSError as exc:
        raise UserError(f"The run folder {run_dir} cannot be written to ({exc.strerror or exc}).",
                        "Check that the folder exists and that you may change it.") from None
    try:
        yield
    finally:
        lock.release()


def _train_locked(run_dir: Path, config: TrainConfig, resume: bool, verbose: bool, world: World) -> str:
    before = st.read_json(run_dir / STATUS_FILE, None)
    session = RunSession(run_dir, verbose)
    trainer = None
    awake = keep_awake(session.status)
    try:
        trainer = Trainer(run_dir, config, session, Group(world))
        return trainer.run(resume)
    except BaseException as exc:  # noqa: BLE001 - every failure ends in status.json, in words
        session.fail(exc)
        keep_what_was_there(run_dir, session.status, before, bool(trainer and trainer.touched),
                            getattr(trainer, "resume", resume),
                            session.status.data.get("error") or "")
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return st.FAILED
    finally:
        awake.stop()
        if trainer is not None:
            trainer.group.close()
        session.close()


def _follow(run_dir: Path, config: TrainConfig, resume: bool, verbose: bool, world: World) -> str:
    """Process N > 0 of a data-parallel run: trains its share, writes nothing of the run folder's contract."""
    session = FollowerSession(run_dir, world.rank, verbose)
    trainer = Trainer(run_dir, config, session, Group(world))
    try:
        return trainer.run(resume)
    except BaseException as exc:  # noqa: BLE001 - logged here; process 0 or the launcher reports it
        session.fail(exc)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return st.FAILED
    finally:
        trainer.group.close()
        session.close()


class _NoProgress:
    def log(self, record: dict) -> None:
        pass


class Trainer:
    def __init__(self, run_dir: Path, config: TrainConfig, session: RunSession, group: Group | None = None):
        self.run_dir, self.cfg, self.session = run_dir, config, session
        self.group = group or Group()
        self.main = self.group.main  # only process 0 writes the run folder
        self.status = session.status
        self.progress = ProgressWriter(run_dir) if self.main else _NoProgress()
        self.touched = False  # nothing of the run's output changed yet (see prepare.keep_what_was_there)
        self.resume = False   # resuming from a checkpoint (a resume with none starts again)
        self.best = BestKeeper(run_dir, config.early_stop_checks, session.status)
        self.base_replies_due = False  # the base model's sample replies, written after the first step

    # ----- setup -------------------------------------------------------
    def run(self, resume: bool) -> str:
        import torch

        from trainer.engine.device import check
        from trainer.engine.models import load_model, peft_quietly, target_modules_for

        cfg = self.cfg
        if resume and latest_checkpoint(self.run_dir) is None and not old_format_checkpoint(self.run_dir):
            log.warning(NO_CHECKPOINT_RESTART)
            self.session.message(NO_CHECKPOINT_RESTART)
            resume = False
        self.resume = resume
        torch.manual_seed(cfg.seed)
        torch.set_grad_enabled(True)  # whatever the embedding program did before
        verdict = check(cfg.device)
        if verdict["device"] == "cpu" and cfg.device == "auto" and verdict.get("reason"):
            log.warning("%s Fix: %s", verdict["reason"], verdict["fix"])
        self.device = verdict["device"]
        self.precision = verdict["precision"] if cfg.precision == "auto" else cfg.precision
        name = verdict["device_name"] if self.group.size == 1 else f"{self.group.size} × {verdict['device_name']}"
        self.status.update(device=self.device, device_name=name, precision=self.precision, processes=self.group.size)
        log.info("Device: %s (%s), precision %s", self.device, name, self.precision)
        self.group.start(self.device)  # several processes: join the others (nothing to do for one)

        if not self.main:
            self.group.wait_for_main()  # process 0 first: it may download or convert the model
        ready = prepare(self.run_dir, cfg, resume, self.session.message)  # everything checked, nothing touched
        if self.main:
            self.group.wait_for_main()
        folder, ckpt, self.tokenizer, self.eval_chats = ready.folder, ready.checkpoint, ready.tokenizer, ready.eval_chats
        train_examples, train_stats, eval_examples, eval_stats = (ready.train_examples, ready.train_stats,
                                                                  ready.eval_examples, ready.eval_stats)
        # No held-out set (a small one keeps every example for training): the sample
        # replies use training prompts instead, and samples.json says so.
        self.sample_chats = self.eval_chats or read_chats(self.run_dir / cfg.train_file)
        self.status.update(examples={"train": len(train_examples), "eval": len(eval_examples),
                                     "truncated": train_stats.truncated + (eval_stats.truncated if eval_stats else 0),
                                     "skipped": train_stats.skipped + (eval_stats.skipped if eval_stats else 0)})

        self.session.message("Loading the model")
        from peft import LoraConfig, get_peft_model

        base = load_model(folder, self.device)
        base.config.use_cache = False
        lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                          target_modules=target_modules_for(base, cfg.target_modules), task_type="CAUSAL_LM")
        with peft_quietly():
            self.model = get_peft_model(base, lora)
        from trainer.engine.speedup import keep_frozen_weights_low, prepare_speed

        # Packing, gathered logits and the precision, each proven on this model and device.
        self.train_batches, self.eval_batches, self.precision = prepare_speed(
            self.model, cfg, train_examples, eval_examples, self.tokenizer.pad_token_id, self.device, self.precision,
            self.session)
        self.precision = self.group.agree_choice(self.precision, PRECISIONS)  # several processes: process 0's choice
        keep_frozen_weights_low(self.model, self.train_batches, self.device, self.precision)  # autocast recasts them
        trainable, total = self.model.get_nb_trainable_parameters()
        self.steps_per_epoch = max(1, math.ceil(len(self.train_batches) / cfg.gradient_accumulation))
        self.epochs = effective_epochs(cfg, len(train_examples))
        self.total_steps = cfg.max_steps or max(1, math.ceil(self.epochs * self.steps_per_epoch))
        if not cfg.max_steps and self.epochs > cfg.epochs:
            log.info("%d examples: %.1f passes, to see at least %d examples in all", len(train_examples),
                     self.epochs, cfg.min_examples_seen)
        self.eval_every = cfg.eval_every or default_eval_every(self.total_steps)
        self.save_every = cfg.save_every or self.eval_every
        self.status.update(params_total=total, params_trainable=trainable, total_steps=self.total_steps, step=0, epoch=0.0)
        log.info("LoRA on %s: %s of %s parameters trainable; %d steps", ", ".join(sorted(lora.target_modules)),
                 f"{trainable:,}", f"{total:,}", self.total_steps)

        from transformers import get_scheduler

        params = [p for p in self.model.parameters() if p.requires_grad]
        self.group.same_start(params)
        self.params = params
        self.optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=0.0)
        warmup = int(round(cfg.warmup_ratio * self.total_steps))
        # transformers' "constant" ignores the warm-up; "constant_with_warmup" is the constant rate after it.
        schedule = "constant_with_warmup" if cfg.lr_scheduler == "constant" and warmup else cfg.lr_scheduler
        self.scheduler = get_scheduler(schedule, self.optimizer, num_warmup_steps=warmup,
                                       num_training_steps=self.total_steps)
        self.scaler = torch.amp.GradScaler("cuda") if self.precision == "fp16" else None
        if self.scaler and self.group.size > 1:  # its scale must exist even where a step's share is empty
            self.scaler.scale(torch.zeros((), device=self.device))

        start = 0
        if ckpt is not None:
            state = load_checkpoint(ckpt, self.model, self.optimizer, self.scheduler)
            start = int(state["step"])
            self.touched = True
            if self.main:
                trim_progress(self.run_dir, start)  # the steps after the checkpoint are repeated
            self.status.update(resumed_from=start)
            log.info("Resuming from %s (step %d)", ckpt.name, start)
        else:
            self.touched = True
            if self.main:
                set_aside_previous(self.run_dir)  # kept until the first new checkpoint or adapter exists
            self._before_training()
        return self._loop(start)

    def _before_training(self) -> None:
        self.session.message("Measuring the model before training")
        before = self.group.eval_loss(self.model, self.eval_batches, self.device, self.precision)
        if not self.main:
            return  # the sample replies are written by process 0 alone
        st.write_json_atomic(self.run_dir / EVAL_FILE, {"before": loss_record(before, len(self.eval_batches.examples)), "after": None})
        if before is not None:
            self.progress.log({"step": 0, "epoch": 0.0, "eval_loss": before, "elapsed_s": 0.0, "time": time.time()})
        # The base model's replies are written right after the first step (_base_replies): with the
        # adapter switched off the model is exactly the base model, so they are the same replies,
        # and the loss plot starts seconds sooner (generating them is most of the "before" time on a CPU).
        self.base_replies_due = write_questions(self.run_dir, self.sample_chats, self.cfg.num_samples,
                                                from_training=not self.eval_chats, own=self.cfg.check_questions)

    def _base_replies(self) -> None:
        self.base_replies_due = False
        self.session.message("Writing the base model's sample replies")
        with self.model.disable_adapter():
            add_replies(self.run_dir, "base", self._replies)
        self.status.update(message="Training")

    def _replies(self, prompts: list[list[dict[str, str]]]) -> list[str]:
        with autocast(self.device, self.precision):
            # A light repetition penalty: small models trained briefly tend to loop under greedy decoding.
            return generate_replies(self.model, self.tokenizer, prompts, self.device,
                                    DEFAULT_DECODING.with_changes(max_new_tokens=self.cfg.sample_max_new_tokens))

    # ----- the loop ------------------------------------------------------
    def _loop(self, start: int) -> str:
        import torch

        from trainer.engine.packing import CPU_ROW_TOKENS

        cfg, model = self.cfg, self.model
        self.row_tokens = CPU_ROW_TOKENS if self.device == "cpu" else None
        n_batches, ga = len(self.train_batches), cfg.gradient_accumulation
        order_cache: dict[int, list[list[int]]] = {}
        model.train()
        self.status.update(state=st.TRAINING, step=start, message="Training")
        t0, tokens, step = time.time(), 0, start
        losses: list[float] = []
        try:
            while step < self.total_steps:
                micro = [(step * ga + k) for k in range(ga)]
                batches = []
                for m in micro:
                    epoch = m // n_batches
                    if epoch not in order_cache:
                        order_cache.clear()
                        order_cache[epoch] = self.train_batches.epoch_order(epoch)
                    batches.append(order_cache[epoch][m % n_batches])
                # The step's loss: the mean over its trained tokens, or (loss_average "example") the
                # mean of each example's own mean, so a long reply counts as much as a short one.
                per_example = cfg.loss_average == "example"
                count = sum((sum(1 for i in b if self.train_batches.trained_tokens([i])) if per_example
                             else self.train_batches.trained_tokens(b)) for b in batches) or 1
                batches = self.group.share(batches, self.train_batches)  # several processes: this one's part
                self.group.stop_together(self.session)  # several processes: all stop at the same step
                loss_sum, step_tokens = 0.0, 0
                for indices in batches:
                    if self.group.size == 1:
                        self.session.check_cancel()
                    if not indices:
                        continue  # fewer examples in the step than processes
                    for part in self.train_batches.pieces(indices, self.row_tokens):  # on a CPU: less memory
                        batch = self.train_batches.collate(part, self.device)
                        if per_example:
                            batch["token_scale"] = per_example_scale(batch)
                        with autocast(self.device, self.precision):
                            loss = summed_loss(model, batch) / count
                        (self.scaler.scale(loss) if self.scaler else loss).backward()
                        loss_sum += float(loss.detach())
                        step_tokens += batch["tokens"]
                loss_sum, step_tokens = self.group.reduce_step(self.params, loss_sum, step_tokens)
                tokens += step_tokens
                if self.scaler:
                    self.scaler.unscale_(self.optimizer)
                grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, 1.0))
                if self.scaler:
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    self.optimizer.step()
                lr = self.scheduler.get_last_lr()[0]
                self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
                step += 1
                losses.append(loss_sum)
                elapsed = time.time() - t0
                epoch_f = step * ga / n_batches
                if step % cfg.log_every == 0 or step == self.total_steps:
                    self.progress.log({"step": step, "epoch": round(epoch_f, 4), "loss": loss_sum, "learning_rate": lr,
                                       "grad_norm": grad_norm, "tokens_per_second": tokens / elapsed if elapsed else 0.0,
                                       "elapsed_s": round(elapsed, 3),
                                       "eta_s": round(elapsed / (step - start) * (self.total_steps - step), 1),
                                       "time": time.time()})
                self.status.update(step=step, epoch=round(epoch_f, 4), loss=loss_sum)
                if self.base_replies_due and self.main:
                    began = time.time()
                    self._base_replies()
                    t0 += time.time() - began  # not training time: speed and time left stay true
                if step % self.eval_every == 0 and step < self.total_steps and self.eval_batches.examples:
                    self.status.update(message="Checking held-out examples")
                    el = self.group.eval_loss(model, self.eval_batches, self.device, self.precision)
                    self.progress.log({"step": step, "epoch": round(epoch_f, 4), "eval_loss": el,
                                       "elapsed_s": round(time.time() - t0, 3), "time": time.time()})
                    self.status.update(message="Training")
                    stop = self.main and self.best.after_eval(step, el, model, self.tokenizer)
                    if self.group.agree(stop):  # process 0 decides to stop early
                        break
                if step % self.save_every == 0 and step < self.total_steps:
                    self._checkpoint(step)
        except Cancelled:
            self.status.update(state=st.SAVING, message="Stopping: saving what was learned so far")
            if step > start:
                self._checkpoint(step)
            self._save_adapter()
            self.status.update(state=st.CANCELLED, message="Stopped; the adapter so far is saved", step=step)
            log.info("Cancelled at step %d; adapter saved", step)
            return st.CANCELLED
        return self._finish(step, losses, tokens, time.time() - t0)

    def _checkpoint(self, step: int) -> None:
        if not self.main:
            return
        save_checkpoint(self.run_dir, step, self.model, self.optimizer, self.scheduler,
                        {"epoch": step * self.cfg.gradient_accumulation / len(self.train_batches)})

    def _save_adapter(self) -> None:
        if not self.main:
            return
        save_adapter(self.run_dir, self.model, self.tokenizer)  # atomic: a temporary folder renamed into place

    def _finish(self, step: int, losses: list[float], tokens: int, runtime: float) -> str:
        self.status.update(state=st.SAVING, message="Saving the adapter")
        self._save_adapter()
        self.session.message("Measuring the fine-tuned model on held-out examples")
        after = self.group.eval_loss(self.model, self.eval_batches, self.device, self.precision)
        if not self.main:
            return st.DONE
        ev = st.read_json(self.run_dir / EVAL_FILE, {}) or {}
        ev["after"] = loss_record(after, len(self.eval_batches.examples))
        st.write_json_atomic(self.run_dir / EVAL_FILE, ev)
        if after is not None:
            self.progress.log({"step": step, "epoch": round(step * self.cfg.gradient_accumulation / len(self.train_batches), 4),
                               "eval_loss": after, "elapsed_s": round(runtime, 3), "time": time.time()})
            self.best.after_eval(step, after, self.model, self.tokenizer, final=True)
        if has_questions(self.run_dir):
            self.session.message("Writing the fine-tuned model's sample replies")
            # From the adapter Try it, merge and export use: the best held-out point's when it was kept.
            used = load_best_adapter(self.run_dir, self.model, self.device)
            add_replies(self.run_dir, "finetuned", self._replies, finetuned_adapter=used)
        before = (ev.get("before") or {}).get("loss")
        tail = losses[-max(1, len(losses) // 10):] if losses else []
        metrics = {"train_loss": sum(tail) / len(tail) if tail else None, "eval_loss_before": before,
                   "eval_loss_after": after, "runtime_s": round(runtime, 1),
                   "tokens_per_second": tokens / runtime if runtime else None}
        self.status.update(state=st.DONE, message="Finished", step=step, metrics=metrics)
        log.info("Done: %s", json.dumps(metrics))
        return st.DONE
