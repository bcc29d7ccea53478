"""Finding and loading the base model: a preset, a Hub id, a local folder or a .gguf file.

Nothing a model folder or run folder holds is ever executed: every load passes
trust_remote_code=False (a model that needs its own Python is refused in
words), and weights come only from safetensors, never from pickles.

Hub downloads go through huggingface_hub into the normal cache, with progress
in the log. Every way this can fail ends in a UserError that says what to do.
A .gguf file is converted once into a safetensors folder in DragonFarm's cache,
so later loads take seconds.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from trainer.run.errors import UserError
from trainer.run.presets import find_preset, resolve_model_id

log = logging.getLogger("dragonfarm.models")

# Used when a model has no chat template: plain role markers closed by the EOS
# token, so the end of every reply is learned.
DEFAULT_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)


# A run packed on another computer names the model as that computer had it.
ELSEWHERE = (" If the run was made on another computer, name the model as this one can get it: "
             "dragonfarm train RUN --model HUB_ID_OR_PATH (or change \"model\" in the run's config.json).")


def cache_dir() -> Path:
    override = os.environ.get("DRAGONFARM_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("DragonFarm", appauthor=False))


def describe_source(model: str) -> str:
    path = Path(model).expanduser()
    if path.suffix.lower() == ".gguf":
        return "a local .gguf file"
    if path.is_dir():
        return "a local model folder"
    return "a preset" if find_preset(model) else "a Hugging Face Hub model"


def resolve_model_path(model: str, on_progress: Callable[[str], None] | None = None) -> Path:
    """A local folder holding config.json, tokenizer and safetensors weights."""
    path = Path(model).expanduser()
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise UserError(f"The model file {path} does not exist.", "Choose the .gguf file again, or pick a preset "
                            "model." + ELSEWHERE)
        return gguf_to_folder(path, on_progress)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"The folder {path} is not a model folder: it has no config.json.",
                            "Choose the folder that holds config.json and the model's .safetensors files.")
        return path
    if model.startswith((".", "/", "~")) or "\\" in model or model.count("/") > 1:
        raise UserError(f"The model folder {model} does not exist.", "Check the path, or pick a preset model." + ELSEWHERE)
    return download(resolve_model_id(model), on_progress)


def download(repo_id: str, on_progress: Callable[[str], None] | None = None) -> Path:
    """Download (or find in the Hugging Face cache) a Hub model; clear messages for every failure."""
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub import errors as hf_errors
    except ImportError as exc:  # pragma: no cover - part of the trainer environment
        raise UserError("huggingface_hub is not installed in the training environment.",
                        "Repair the training environment (Settings > Repair).") from exc
    token = os.environ.get("HF_TOKEN") or None
    patterns = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "tokenizer*"]
    if on_progress:
        on_progress(f"Getting {repo_id} (downloads once, then comes from the cache)")
    log.info("Fetching %s from the Hugging Face Hub into %s", repo_id, os.environ.get("HF_HOME", "the default cache"))
    try:
        try:  # already cached: no network needed
            folder = snapshot_download(repo_id, allow_patterns=patterns, token=token, local_files_only=True)
        except Exception:  # noqa: BLE001 - any miss means "download it"
            folder = snapshot_download(repo_id, allow_patterns=patterns, token=token,
                                       tqdm_class=_progress_bar(repo_id, on_progress))
    except hf_errors.GatedRepoError as exc:
        raise UserError(
            f"{repo_id} is a gated model: its owners ask you to accept their license first.",
            f"Open https://huggingface.co/{repo_id}, accept the license, then add your Hugging Face token "
            "in Settings (or set HF_TOKEN) and start again." if not token else
            f"Your token was refused for {repo_id}. Open https://huggingface.co/{repo_id}, accept the license "
            "with the same account, or check the token in Settings.") from exc
    except hf_errors.RepositoryNotFoundError as exc:
        raise UserError(f"There is no model called '{repo_id}' on the Hugging Face Hub (or it is private).",
                        "Check the spelling (it looks like owner/name), or pick a preset.") from exc
    except hf_errors.RevisionNotFoundError as exc:
        raise UserError(f"The requested version of {repo_id} does not exist.", "Pick a preset model.") from exc
    except (hf_errors.LocalEntryNotFoundError, OSError) as exc:
        raise UserError(f"Could not download {repo_id}: no connection to huggingface.co.",
                        "Check your internet connection and try again; once downloaded, the model works offline.") from exc
    folder = Path(folder)
    if not list(folder.glob("*.safetensors")):
        raise UserError(f"{repo_id} has no .safetensors weights, which DragonFarm needs.",
                        "Pick a preset, or a model that publishes safetensors files.")
    return folder


def _progress_bar(repo_id: str, on_progress: Callable[[str], None] | None) -> Any:
    """A tqdm class that reports download progress to the log and the run's status."""
    from tqdm.auto import tqdm

    class Reporter(tqdm):  # type: ignore[misc, valid-type]
        _last = -1

        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            if self.total and self.unit == "B":
                percent = int(100 * self.n / self.total)
                if percent // 5 != self._last // 5:
                    self._last = percent
                    text = f"Downloading {repo_id}: {percent}% of {self.total / 1e6:.0f} MB"
                    log.info(text)
                    if on_progress:
                        on_progress(text)
            return shown

    return Reporter


def _gguf_key(path: Path) -> str:
    stat = path.stat()
    digest = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{int(stat.st_mtime)}".encode()).hexdigest()[:16]
    return f"{path.stem}-{digest}"


def gguf_to_folder(path: Path, on_progress: Callable[[str], None] | None = None) -> Path:
    """Convert a .gguf model once into a cached safetensors folder (dequantised, float32)."""
    target = cache_dir() / "gguf" / _gguf_key(path)
    if (target / "config.json").is_file() and list(target.glob("*.safetensors")):
        return target
    if on_progress:
        on_progress(f"Converting {path.name} (once; later runs reuse it)")
    log.info("Converting %s into %s", path, target)
    try:
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover
        raise UserError("transformers is not installed in the training environment.",
                        "Repair the training environment (Settings > Repair).") from exc
    folder, name = str(path.parent), path.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, trust_remote_code=False)
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, trust_remote_code=False)
    except ImportError as exc:
        raise UserError("Reading .gguf files needs the 'gguf' package in the training environment.",
                        "Repair the training environment (Settings > Repair).") from exc
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"Could not read {path.name} as a model: {exc}",
                        "Use a .gguf file of a supported architecture (Llama, Qwen2, Gemma...), or a preset.") from exc
    # save_pretrained refuses a GGUF-loaded model: rebuild it from a clean config.
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict(), strict=False)
    model.tie_weights()
    tmp = target.with_name(f"{target.name}.{os.getpid()}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "dragonfarm_source.json").write_text(json.dumps({"gguf": str(path.resolve()),
                                                            "transformers": transformers.__version__}))
    shutil.rmtree(target, ignore_errors=True)
    tmp.replace(target)
    return target


def load_tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    except (ValueError, OSError, TypeError) as exc:
        raise UserError(f"The tokenizer in {folder} cannot be loaded: {str(exc)[:300]}",
                        "DragonFarm only uses tokenizers that need no code of their own; pick a preset model, "
                        "or a model whose tokenizer is a plain tokenizer.json.") from exc
    if not getattr(tokenizer, "chat_template", None):
        log.info("The model has no chat template; using DragonFarm's default one")
        tokenizer.chat_template = DEFAULT_CHAT_TEMPLATE
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    if tokenizer.eos_token is None:
        raise UserError("The model's tokenizer has no end-of-text token, so replies could never end.",
                        "Pick a chat (instruct) model.")
    return tokenizer


def load_model(folder: Path, device: str, dtype: Any = None) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype or torch.float32,
                                                     trust_remote_code=False, use_safetensors=True)
    except ValueError as exc:
        raise UserError(f"This model type cannot be fine-tuned here: {exc}",
                        "Pick a causal language model (chat/instruct models work best).") from exc
    except OSError as exc:
        raise UserError(f"The model in {folder} has no .safetensors weights that could be read: {str(exc)[:300]}",
                        "DragonFarm never loads .bin/.pt weights (they can run code); pick a model that publishes "
                        "safetensors files, or a .gguf file.") from exc
    return model.to(device)


def target_modules_for(model: Any, wanted: list[str] | str) -> list[str] | str:
    """"all-linear": every nn.Linear inside the transformer blocks (not the output head)."""
    if wanted != "all-linear":
        return wanted
    import torch

    names = set()
    for full_name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and "lm_head" not in full_name and "embed" not in full_name:
            names.add(full_name.rsplit(".", 1)[-1])
    if not names:
        raise UserError("Could not find any linear layers to attach LoRA to in this model.",
                        "Set target_modules in the Advanced settings, or pick a preset model.")
    return sorted(names)


@contextmanager
def peft_quietly() -> Iterator[None]:
    """Wrap a model with peft without its FutureWarning on every run: peft
    (0.17 to 0.21 at least) reads transformers' deprecated
    `is_gradient_checkpointing` when it wraps a model; our code never uses
    it. Only that one message is ignored, and only inside this block."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated",
                                category=FutureWarning)
        yield
