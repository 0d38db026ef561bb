"""Errors a client can cause: a stable code, an HTTP status, and a message naming the fix, in English and
Chinese. HTTP statuses live here, not in the engine: `from_engine` maps the engine's error codes."""

from __future__ import annotations

from grading.errors import InvalidSubmission, UnknownExercise
from grading.messages import Message
from service.messages import error

ECHO_CHARS = 80  # longest piece of client input repeated in a message


def clip(value: object, limit: int = ECHO_CHARS) -> str:
    """Client input as it may appear in a message: one printable line, at most `limit` characters."""
    text = "".join(ch if ch.isprintable() else "?" for ch in " ".join(str(value)[: limit * 4].split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preferred_lang(accept_language: str | None) -> str:
    """zh if the client's most preferred language is Chinese, else en (the fallback)."""
    best, best_q = "en", -1.0
    for part in (accept_language or "")[:500].split(","):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        tag = tag.strip().lower()
        if tag and q > best_q:
            best, best_q = ("zh" if tag.startswith("zh") else "en"), q
    return best


class ServiceError(Exception):
    """A 4xx naming the fix: a catalogue message (service/messages.py's `error(key, ...)`) in English and
    Chinese, or a plain English text. `message` is the English, `zh` the Chinese (None: English only)."""

    status_code = 400
    code = "bad_request"

    def __init__(
        self,
        message: Message | str,
        *,
        code: str | None = None,
        status_code: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        english, chinese = (message.en, message.zh or None) if isinstance(message, Message) else (message, None)
        super().__init__(english)
        self.message = english
        self.zh = chinese
        self.headers = headers or {}
        if code:
            self.code = code
        if status_code:
            self.status_code = status_code

    def text(self, lang: str) -> str:
        return self.zh if lang == "zh" and self.zh else self.message


class NotAuthenticated(ServiceError):
    status_code, code = 401, "not_authenticated"


class Forbidden(ServiceError):
    status_code, code = 403, "forbidden"


class NotFound(ServiceError):
    status_code, code = 404, "not_found"


class Conflict(ServiceError):
    status_code, code = 409, "conflict"


class TooLarge(ServiceError):
    status_code, code = 413, "too_large"


class TooMany(ServiceError):
    status_code, code = 429, "rate_limited"

    def __init__(self, message: Message | str, *, retry_after_s: int, **kw) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, int(retry_after_s)))}, **kw)


class Unsatisfiable(ServiceError):
    status_code, code = 422, "resources_unavailable"


class DatabaseUnavailable(ServiceError):
    """A 503: the database cannot be reached now (down, restarting, out of disk); nothing was changed."""

    status_code, code = 503, "database_unavailable"

    def __init__(self, *, retry_after_s: int) -> None:
        wait = max(1, int(retry_after_s))
        super().__init__(error("database_unavailable", wait_s=wait), headers={"Retry-After": str(wait)})


# ---- the engine's InvalidSubmission codes -> HTTP ------------------------------------------------------

ENGINE_STATUS: dict[str, int] = {"too_large": 413, "unknown_exercise": 404}  # every other code is a 422
ENGINE_ZH: dict[str, str] = {
    "too_large": "笔记本超过大小上限；请清除输出（Kernel > Restart & Clear Output）后重新提交",
    "invalid_json": "上传的文件不是有效的 JSON；请提交 .ipynb 文件本身",
    "not_a_notebook": "上传的内容是 JSON，但不是 Jupyter 笔记本（缺少 nbformat/cells）；"
    "请提交从 Jupyter 下载的 .ipynb 文件",
    "nbformat_invalid": "笔记本不符合 nbformat 4；请在 Jupyter 中重新保存，或从练习模板重新开始",
    "missing_exercise": "无法确定练习：请在表单字段 exercise_id 中给出练习编号，或提交从练习模板开始的笔记本",
    "exercise_mismatch": "该笔记本属于另一个练习；请提交到它所属的练习，或下载正确的模板",
    "unknown_exercise": "练习 {exercise_id} 不存在；可用 GET /api/v1/exercises 查看全部练习",
    "nesting_too_deep": "JSON 嵌套层数过深；请提交从 Jupyter 保存的笔记本",
    "too_many_cells": "笔记本的代码单元过多；请删除多余的单元，或从练习模板重新开始",
}


ENGINE_HTTP_MESSAGES: dict[str, str] = {
    "missing_exercise": "the notebook does not say which exercise it is for; send the form field exercise_id "
    "(see GET /api/v1/exercises) or start from the exercise's template "
    "(GET /api/v1/exercises/{id}/notebook)",
}


def from_engine(exc: InvalidSubmission) -> ServiceError:
    """The engine's rejection as an HTTP error; messages name endpoints, never CLI commands."""
    message, params = exc.message, {}
    if isinstance(exc, UnknownExercise):
        params["exercise_id"] = clip(exc.exercise_id)
        message = f"exercise {params['exercise_id']!r} does not exist; list the exercises with GET /api/v1/exercises"
    elif exc.code in ENGINE_HTTP_MESSAGES:  # the engine's text names CLI flags; over HTTP name the field
        message = ENGINE_HTTP_MESSAGES[exc.code]
    zh = ENGINE_ZH.get(exc.code)  # the English is the engine's own text, so only the Chinese is kept here
    texts = Message(en=message, zh=zh.format(**params) if zh else "")
    return ServiceError(texts, code=exc.code, status_code=ENGINE_STATUS.get(exc.code, 422))
