"""A character-level test tokenizer with ChatML specials as single ids (stands in for Qwen's BPE)."""

from __future__ import annotations

import re

SPECIALS = ("<|im_start|>", "<|im_end|>")
_SPLIT = re.compile("(" + "|".join(re.escape(s) for s in SPECIALS) + ")")


class CharTokenizer:
    """encode/decode round-trip exactly; specials are ids 0 and 1, characters are 2 + code point."""

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in _SPLIT.split(text):
            if piece in SPECIALS:
                ids.append(SPECIALS.index(piece))
            else:
                ids.extend(2 + ord(c) for c in piece)
        return ids

    def decode(self, ids: list[int]) -> str:
        return "".join(SPECIALS[i] if i < len(SPECIALS) else chr(i - 2) for i in ids)
