"""The Hugging Face token: in the OS keyring where there is one, else in a
plain (unencrypted) file only this user can read, in the config folder
(Settings says which). Never in a run folder or log.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from trainer.run.settings import config_dir

SERVICE = "DragonFarm"
USERNAME = "huggingface-token"
TOKEN_FILE = "hf_token"


def _keyring():
    """The keyring module if it has a real backend, else None."""
    if os.environ.get("DRAGONFARM_NO_KEYRING"):
        return None
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 0) <= 0:
            return None
        return keyring
    except Exception:  # noqa: BLE001 - any keyring trouble means: use the file
        return None


def token_file() -> Path:
    return config_dir() / TOKEN_FILE


def where() -> str:
    """'keyring' or 'file': where a token would be stored."""
    return "keyring" if _keyring() else "file"


def storage_note() -> str:
    """Where the token is kept, in words for Settings; plain about the file fallback."""
    if where() == "keyring":
        return "The token is stored in your system's keyring, never in a run folder or log."
    guard = ("only your Windows account can open" if os.name == "nt"
             else "only your user account can read (permissions 600)")
    return ("No system keyring was found on this computer, so the token is kept in a plain, unencrypted "
            f"file that {guard}: {token_file()}. It never goes into a run folder or log. "
            "Remove it here when you no longer need it.")


def get_token() -> str | None:
    env = os.environ.get("HF_TOKEN")
    kr = _keyring()
    if kr:
        try:
            value = kr.get_password(SERVICE, USERNAME)
            if value:
                return value
        except Exception:  # noqa: BLE001
            pass
    try:
        value = token_file().read_text(encoding="utf-8").strip()
        if value:
            return value
    except OSError:
        pass
    return env or None


def set_token(token: str) -> str:
    """Store the token; returns where it went ('keyring' or 'file')."""
    token = token.strip()
    if not token:
        clear_token()
        return where()
    kr = _keyring()
    if kr:
        try:
            kr.set_password(SERVICE, USERNAME, token)
            _remove_file()
            return "keyring"
        except Exception:  # noqa: BLE001 - fall back to the private file
            pass
    path = token_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    return "file"


def clear_token() -> None:
    kr = _keyring()
    if kr:
        try:
            kr.delete_password(SERVICE, USERNAME)
        except Exception:  # noqa: BLE001
            pass
    _remove_file()


def _remove_file() -> None:
    try:
        token_file().unlink()
    except FileNotFoundError:
        pass


def looks_like_token(token: str) -> bool:
    token = token.strip()
    return token.startswith("hf_") and len(token) >= 20 and " " not in token
