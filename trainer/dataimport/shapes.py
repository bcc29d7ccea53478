"""Shapes of example data, the mapping from a file's columns to chats, and
turning one record into the chat the model will see.

Shapes: chat `messages` (role/content), ShareGPT `conversations`
(from/value), Alpaca (instruction/input/output), prompt/completion,
question/answer, and any table with two text columns ("columns").
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import asdict, dataclass, fields
from typing import Any

SHAPES = ("messages", "sharegpt", "alpaca", "prompt_completion", "question_answer", "columns")
CHAT_SHAPES = ("messages", "sharegpt")

SHAPE_WORDS = {
    "messages": "chat messages (a 'messages' list with role and content)",
    "sharegpt": "ShareGPT conversations (a 'conversations' list with from and value)",
    "alpaca": "Alpaca (instruction, input, output)",
    "prompt_completion": "prompt and completion",
    "question_answer": "question and answer",
    "columns": "a table of prompts and replies",
}

ROLE_ALIASES = {
    "system": "system",
    "user": "user", "human": "user", "prompter": "user", "question": "user",
    "assistant": "assistant", "gpt": "assistant", "bot": "assistant", "model": "assistant",
    "ai": "assistant", "chatgpt": "assistant", "answer": "assistant",
}
_CHAT_KEYS = ("messages", "conversations", "conversation", "chat", "dialog", "dialogue")
_PROMPT_NAMES = ("prompt", "question", "instruction", "input", "user", "query", "q", "request", "message")
_REPLY_NAMES = ("completion", "answer", "response", "output", "reply", "assistant", "a", "target", "chosen")
_SYSTEM_NAMES = ("system", "system_prompt", "system prompt", "systemprompt", "persona")


@dataclass
class Mapping:
    """Which columns make the chat. Fields left None are detected.

    Column shapes use prompt_column (+ optional input_column), reply_column and
    system_column; chat shapes use messages_column. system_prompt, when set,
    is one system message for every example that has none of its own.
    """

    shape: str | None = None
    prompt_column: str | None = None
    reply_column: str | None = None
    input_column: str | None = None
    system_column: str | None = None
    system_prompt: str | None = None
    messages_column: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Mapping":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in known})

    def merged_over(self, detected: "Mapping") -> "Mapping":
        """The user's choices (non-None fields) laid over a detected mapping."""
        out = Mapping(**detected.to_dict())
        mine = {k: v for k, v in self.to_dict().items() if v is not None}
        if ({"prompt_column", "reply_column"} & mine.keys()) and "shape" not in mine \
                and out.shape in CHAT_SHAPES:
            out = Mapping(shape="columns", system_prompt=out.system_prompt)
        for key, value in mine.items():
            setattr(out, key, value if value != "" else None)
        if out.system_prompt is not None and not out.system_prompt.strip():
            out.system_prompt = None
        return out

    def columns_used(self) -> list[str]:
        if self.shape in CHAT_SHAPES:
            return [c for c in (self.messages_column,) if c]
        return [c for c in (self.prompt_column, self.input_column, self.reply_column, self.system_column) if c]


def _find(columns: list[str], names: tuple[str, ...], taken: set[str] = frozenset()) -> str | None:
    low = {c.strip().lower(): c for c in reversed(columns) if c not in taken}
    for name in names:
        if name in low:
            return low[name]
        alt = name.replace(" ", "_")
        if alt in low:
            return low[alt]
    return None


def _is_chat_list(value: Any) -> str | None:
    if isinstance(value, list) and value and isinstance(value[0], dict):
        keys = set(value[0])
        if {"role", "content"} <= keys:
            return "messages"
        if {"from", "value"} <= keys:
            return "sharegpt"
    return None


def detect_mapping(columns: list[str], sample: list[dict[str, Any]]) -> Mapping:
    """Propose a mapping from the column names and the first records."""
    for key in list(_CHAT_KEYS) + list(columns):
        col = _find(columns, (key,))
        if col is None:
            continue
        kinds = [_is_chat_list(r.get(col)) for r in sample if isinstance(r.get(col), list)]
        kinds = [k for k in kinds if k]
        if kinds:
            shape = max(set(kinds), key=kinds.count)
            return Mapping(shape=shape, messages_column=col)
    system = _find(columns, _SYSTEM_NAMES)
    taken = {system} if system else set()
    instruction, output = _find(columns, ("instruction",)), _find(columns, ("output",))
    if instruction and output:
        inp = _find(columns, ("input",))
        return Mapping("alpaca", instruction, output, inp, system)
    pairs = (("prompt_completion", ("prompt",), ("completion",)),
             ("question_answer", ("question",), ("answer",)),
             ("prompt_completion", ("prompt",), ("response", "answer", "output", "reply")))
    for shape, p_names, r_names in pairs:
        p, r = _find(columns, p_names, taken), _find(columns, r_names, taken)
        if p and r and p != r:
            return Mapping(shape, p, r, None, system)
    prompt = _find(columns, _PROMPT_NAMES, taken)
    reply = _find(columns, _REPLY_NAMES, taken | ({prompt} if prompt else set()))
    if not (prompt and reply):
        texty = [c for c in columns if c not in taken and _mostly_text(c, sample)]
        if len(texty) < 2:  # short answers such as numbers: any filled column not named like an id
            texty += [c for c in columns if c not in taken and c not in texty and not _id_name(c)
                      and any(r.get(c) not in (None, "") for r in sample)]
        rest = [c for c in texty if c not in (prompt, reply)]
        prompt = prompt or (rest.pop(0) if rest else None)
        reply = reply or next((c for c in rest if c != prompt), None)
    return Mapping("columns", prompt, reply, None, system)


_ID_NAMES = ("id", "#", "no", "no.", "nr", "nr.", "num", "number", "index", "idx", "key", "uuid", "guid", "row",
             "line", "n", "count", "date", "time", "timestamp", "created", "created_at", "updated_at")
_CODE = re.compile(r"[\w.:/+-]{1,40}")  # one token: 17, A-0042, 2026-07-14, 6f1c...-..., 12:30


def _id_name(col: str) -> bool:
    low = col.strip().lower()
    return low in _ID_NAMES or low.endswith(("_id", " id"))


def _mostly_text(col: str, sample: list[dict[str, Any]]) -> bool:
    """Does the column hold words people wrote (not numbers, ids or dates)?"""
    if _id_name(col):
        return False
    values = [r.get(col) for r in sample if r.get(col) not in (None, "")]
    texts = [v.strip() for v in values if isinstance(v, str) and v.strip()]
    if not values or len(texts) * 2 < len(values):
        return False
    codes = sum(1 for t in texts if _CODE.fullmatch(t) and any(ch.isdigit() for ch in t))
    return codes * 2 < len(texts)


# ----- one record to one chat ---------------------------------------------

class CellProblem:
    """A cell a reader could not turn into text (an Excel error value, a
    formula never calculated, bytes not in the file's encoding, a NUL). It
    becomes a RowError only when the mapping uses its column."""

    __slots__ = ("kind", "text")

    def __init__(self, kind: str, text: str):
        self.kind, self.text = kind, text

    def __repr__(self) -> str:
        return f"CellProblem({self.kind!r}, {self.text!r})"


class RowError(Exception):
    """One row cannot be used: kind, column and the sentence after 'row N:'."""

    def __init__(self, kind: str, column: str | None, text: str):
        super().__init__(text)
        self.kind, self.column, self.text = kind, column, text


def cell_text(value: Any, column: str, lenient: bool) -> str:
    """A cell or JSON value as text. Spreadsheet numbers and dates are fine
    (lenient); in JSON only strings are text."""
    if value is None:
        return ""
    if isinstance(value, CellProblem):
        raise RowError(value.kind, column, value.text)
    if isinstance(value, str):
        if "\x00" in value:
            raise RowError("control_chars", column, f"the text in '{column}' holds a NUL character (a zero byte), "
                           "which is not text; delete it")
        return _clean(value.strip())
    if lenient and not isinstance(value, (list, dict)):
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        if isinstance(value, (_dt.date, _dt.time)):
            return value.isoformat()
        return str(value)
    what = {bool: "true/false", int: "a number", float: "a number", list: "a list", dict: "an object"}
    kind = what.get(type(value), type(value).__name__)
    raise RowError("not_text", column, f"the value in '{column}' is {kind}, not text; "
                   "put the text in quotes or fix the value")


def _clean(text: str) -> str:
    """Lone surrogates (from JSON escapes such as \\ud800) cannot be written as UTF-8."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def is_empty_record(record: dict[str, Any]) -> bool:
    return all(v is None or (isinstance(v, str) and not v.strip()) for v in record.values())


def mapping_is_guess(columns: list[str], m: Mapping) -> bool:
    """Were the prompt and reply picked by position, not by their names?"""
    if m.shape != "columns" or not (m.prompt_column and m.reply_column):
        return False
    return _find([m.prompt_column], _PROMPT_NAMES) is None or _find([m.reply_column], _REPLY_NAMES) is None


def record_to_chat(record: dict[str, Any], m: Mapping, lenient: bool) -> list[dict[str, str]]:
    """The chat for one record, or RowError saying what is wrong."""
    if m.shape in CHAT_SHAPES:
        return _chat_from_list(record, m, lenient)
    if not m.prompt_column or not m.reply_column:
        raise RowError("no_mapping", None, "no prompt and reply columns are chosen")
    for col in m.columns_used():
        if col not in record:
            raise RowError("missing_column", col, f"the column '{col}' is missing; add it to this row")
    prompt = cell_text(record.get(m.prompt_column), m.prompt_column, lenient)
    extra = cell_text(record.get(m.input_column), m.input_column, lenient) if m.input_column else ""
    reply = cell_text(record.get(m.reply_column), m.reply_column, lenient)
    system = cell_text(record.get(m.system_column), m.system_column, lenient) if m.system_column else ""
    if not prompt and not extra:
        raise RowError("empty_prompt", m.prompt_column, f"the prompt (column '{m.prompt_column}') is empty; "
                       "write the prompt or delete the row")
    if not reply:
        raise RowError("empty_reply", m.reply_column, f"the reply (column '{m.reply_column}') is empty; "
                       "write the reply or delete the row")
    user = f"{prompt}\n\n{extra}" if prompt and extra else (prompt or extra)
    system = system or (m.system_prompt or "").strip()
    chat = [{"role": "system", "content": system}] if system else []
    chat += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return chat


def _chat_from_list(record: dict[str, Any], m: Mapping, lenient: bool) -> list[dict[str, str]]:
    col = m.messages_column or ("conversations" if m.shape == "sharegpt" else "messages")
    if col not in record:
        raise RowError("missing_column", col, f"'{col}' is missing; every example needs its list of messages")
    items = record[col]
    if not isinstance(items, list):
        raise RowError("not_text", col, f"'{col}' is not a list of messages; write it as [{{...}}, {{...}}]")
    role_key, text_key = ("from", "value") if m.shape == "sharegpt" else ("role", "content")
    chat: list[dict[str, str]] = []
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict) or role_key not in item or text_key not in item:
            raise RowError("missing_column", col, f"message {i} needs '{role_key}' and '{text_key}'")
        raw_role = item[role_key]
        role = ROLE_ALIASES.get(raw_role.strip().lower()) if isinstance(raw_role, str) else None
        if role is None:
            raise RowError("bad_role", col, f"message {i} has the role {raw_role!r}; use system, user or assistant")
        text = cell_text(item[text_key], f"{col}[{i}].{text_key}", lenient)
        expected = ("system", "user") if not chat else ("assistant",) if chat[-1]["role"] == "user" else ("user",)
        if role not in expected:
            after = f"after a '{chat[-1]['role']}' message" if chat else "first"
            raise RowError("roles_order", col, f"message {i} is '{role}' {after}; messages must go "
                           "(system,) user, assistant, user, assistant...")
        if role == "assistant" and not text:
            raise RowError("empty_reply", col, f"message {i} (the reply) is empty; write the reply or delete it")
        chat.append({"role": role, "content": text})
    if not any(msg["role"] == "assistant" for msg in chat):
        raise RowError("empty_reply", col, "there is no assistant reply; add one or delete the example")
    if chat[-1]["role"] != "assistant":
        raise RowError("roles_order", col, "the last message is a user message with no reply; "
                       "add the reply or delete that message")
    if m.system_prompt and chat[0]["role"] != "system":
        chat.insert(0, {"role": "system", "content": m.system_prompt.strip()})
    return chat
