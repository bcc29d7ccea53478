"""`dragonfarm push RUN --repo NAME`: share a run's model on the Hugging Face Hub.

Uploads the adapter (the best one unless `last`), or the merged model, or the
newest GGUF export, with a model card (README.md, see modelcard.py), in one
commit. The token comes from the caller (the CLI reads HF_TOKEN; the app puts
the keyring's token there); it is never printed, logged or written to the run.
The Hub's errors become words: no token, a token that cannot write, a name
already taken, no network.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer.run.errors import UserError
from trainer.run.files import EXPORT_DIR, MERGE_INFO, MERGED_DIR
from trainer.run.reader import Run

WHAT = ("adapter", "merged", "gguf")
TOKEN_PAGE = "https://huggingface.co/settings/tokens"
_NAME = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
NETWORK_ERRORS = {"RequestError", "TransportError", "ConnectionError", "TimeoutError", "OfflineModeIsEnabled"}
Progress = Callable[[str], None]


def _hub_api(token: str) -> Any:
    from huggingface_hub import HfApi

    return HfApi(token=token)


def hub_error(exc: BaseException, repo_id: str) -> UserError | None:
    """The Hub's exception in words, or None when it is not one we know."""
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    if isinstance(code, int):
        if code == 401:
            return UserError("The Hugging Face Hub refused the token: it is wrong, expired or revoked.",
                             f"Make a new token with write access at {TOKEN_PAGE} and save it in Settings "
                             "(or set HF_TOKEN).")
        if code in (403, 404):
            return UserError(f"The token is not allowed to write to {repo_id}: it is read-only, or {repo_id} "
                             "belongs to someone else.",
                             f"Make a token with write access at {TOKEN_PAGE}, or use a name in your own account.")
        if code == 409:
            return UserError(f"The name {repo_id} is already taken on the Hub.",
                             "Choose another name, or add --update to upload a new version into it (it must be yours).")
        if code == 429:
            return UserError("The Hugging Face Hub says there were too many requests.", "Wait a few minutes and try again.")
        if code >= 500:
            return UserError(f"The Hugging Face Hub had a problem ({code}).", "Try again later.")
        return UserError(f"The Hugging Face Hub refused the upload ({code}): {str(exc).splitlines()[0][:200]}",
                         "Check the name and try again.")
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & NETWORK_ERRORS or isinstance(exc, OSError):
        return UserError("Could not reach the Hugging Face Hub.",
                         "Check the internet connection (and any proxy), then try again.")
    return None


def files_to_upload(run: Run, what: str, last: bool, on_progress: Progress) -> list[tuple[str, Path]]:
    """(path in the repo, local file) for each file to upload."""
    if what == "adapter":
        folder = run.adapter_for(last)
        return [(p.relative_to(folder).as_posix(), p) for p in sorted(folder.rglob("*")) if p.is_file()]
    if what == "merged":
        from trainer.results.merge import ensure_merged

        ensure_merged(run.path, on_progress, last=last)
        folder = run.path / MERGED_DIR
        # the merge info holds held-out prompts (the person's data): it stays home
        return [(p.relative_to(folder).as_posix(), p) for p in sorted(folder.rglob("*"))
                if p.is_file() and p.name != MERGE_INFO]
    found = sorted((run.path / EXPORT_DIR).glob("*.gguf"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise UserError(f"The run {run.name} has no GGUF export yet.",
                        f"Export one first (dragonfarm export {run.path} --format gguf), then push again.")
    return [(found[-1].name, found[-1])]


def push(run_dir: str | Path, repo: str, private: bool = False, what: str = "adapter", last: bool = False,
         samples: bool = True, update: bool = False, token: str | None = None,
         on_progress: Progress = print) -> str:
    """Upload; returns the repo's web address."""
    from trainer.results.modelcard import model_card

    token = token or os.environ.get("HF_TOKEN") or None
    if not token:
        raise UserError("There is no Hugging Face token, so nothing can be uploaded.",
                        f"Make a token with write access at {TOKEN_PAGE} and save it in the app's Settings, "
                        "or set the HF_TOKEN environment variable.")
    repo = (repo or "").strip()
    if not _NAME.match(repo) or ".." in repo or repo.endswith((".", "-")):
        raise UserError(f"'{repo}' is not a name the Hub accepts.",
                        "Use letters, digits, '-', '_' and '.', like my-helper or your-name/my-helper.")
    if what not in WHAT:
        raise UserError(f"'{what}' is not something push can upload.", f"Use one of: {', '.join(WHAT)}.")
    run = Run(run_dir)
    if not run.has_adapter():
        raise UserError(f"The run {run.name} has no trained adapter yet, so there is nothing to share.", "Train it first.")
    if run.status().get("live"):
        raise UserError(f"The run {run.name} is still training.", "Push it when it has finished or been stopped.")
    api = _hub_api(token)
    repo_id = repo
    try:
        who = api.whoami()
        auth = (who.get("auth") or {}).get("accessToken") or {}
        if auth.get("role") == "read":
            raise UserError("The Hugging Face token is read-only, so it cannot upload.",
                            f"Make a token with write access at {TOKEN_PAGE} and save it in Settings (or HF_TOKEN).")
        if "/" not in repo:
            repo_id = f"{who.get('name')}/{repo}"
        files = files_to_upload(run, what, last, on_progress)
        card = model_card(run.path, what, samples, "last" if last or not run.has_best_adapter() else "best", repo_id)
        size = sum(p.stat().st_size for _, p in files) / 1e6
        on_progress(f"Creating {repo_id} on the Hub ({'private' if private else 'public'})…")
        api.create_repo(repo_id, private=private, exist_ok=update, repo_type="model")
        on_progress(f"Uploading {len(files)} files ({size:.1f} MB) and a model card…")
        from huggingface_hub import CommitOperationAdd

        operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(path)) for name, path in files]
        operations.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card.encode("utf-8")))
        api.create_commit(repo_id, operations, commit_message=f"{run.name} ({what}) from DragonFarm",
                          repo_type="model")
    except UserError:
        raise
    except Exception as exc:
        words = hub_error(exc, repo_id)
        if words is None:
            raise
        raise words from exc
    url = f"https://huggingface.co/{repo_id}"
    on_progress(f"Uploaded to {url}")
    return url
