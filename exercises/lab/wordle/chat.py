"""A minimal Qwen-style (ChatML) renderer: the initial prompt and the raw env text between turns.

The trainer's tokenizer carries its own chat template; this renderer is what the agent loop uses when
none is supplied, and what the tests use. It writes the same ``<|im_start|>role\\n...<|im_end|>\\n``
layout as Qwen3's template without the thinking-mode extras.
"""

from __future__ import annotations

from collections.abc import Sequence

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"


def render_chat(messages: Sequence[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """Render messages as ChatML; with ``add_generation_prompt`` end on an open assistant turn."""
    parts = [f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages]
    if add_generation_prompt:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


def render_env_turn(message: str, *, assistant_closed: bool = True) -> str:
    """The raw text appended after a model reply: close the reply if needed, a user turn, a new assistant turn."""
    close = "" if assistant_closed else IM_END
    return f"{close}\n{IM_START}user\n{message}{IM_END}\n{IM_START}assistant\n"
