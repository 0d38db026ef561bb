"""A CPU-sized HF tokenizer for the lab: one token per character, plus Qwen's chat specials.

Letters stay single tokens so the tiny model spells guesses letter by letter (what Wordle's partial
credit rewards); the long fixed prompt/feedback phrases become single added tokens so a six-turn
game stays a few hundred tokens long.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from pathlib import Path

#: Qwen's chat specials, same spelling as Qwen3's tokenizer.
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
#: Tags the reward regex looks for; ordinary (non-special) tokens so decoding keeps them.
TAG_TOKENS = ("<guess>", "</guess>", "<think>", "</think>")
#: Qwen-style ChatML template (no tools, no thinking switch).
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
UNK = "<unk>"


def base_characters() -> list[str]:
    """Printable ASCII plus newline (tabs and other whitespace map to <unk>)."""
    return [c for c in string.printable if c not in "\t\r\x0b\x0c"]


def build_tokenizer(phrases: Sequence[str] = ()):
    """A `PreTrainedTokenizerFast` (transformers' tokenizers backend) over characters + specials + phrases."""
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    vocab = {UNK: 0}
    for ch in base_characters():
        vocab[ch] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
    core.decoder = decoders.Fuse()
    core.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIAL_TOKENS])
    # Longest first so a phrase that contains another still wins.
    extra = list(TAG_TOKENS) + sorted({p for p in phrases if len(p) > 1}, key=len, reverse=True)
    core.add_tokens([AddedToken(t, normalized=False, special=False) for t in extra])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=UNK
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def save_tokenizer(tok, directory: str | Path) -> None:
    """Save tokenizer.json + tokenizer_config.json, with the chat template inside the config too.

    transformers 5 writes the template to chat_template.jinja; older readers (and the course's
    transformers 4.57) look in tokenizer_config.json, so it goes in both.
    """
    directory = Path(directory)
    tok.save_pretrained(directory)
    cfg_path = directory / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["chat_template"] = CHAT_TEMPLATE
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def load_tokenizer(directory: str | Path):
    """Load the shipped tokenizer with transformers' `AutoTokenizer`, as verl does from the model path."""
    from transformers import AutoTokenizer

    directory = Path(directory)
    if not (directory / "tokenizer.json").is_file():
        raise FileNotFoundError(
            f"no tokenizer.json under {directory}; run scripts/make_tiny_checkpoint.py to build the lab checkpoint."
        )
    tok = AutoTokenizer.from_pretrained(str(directory))
    if not getattr(tok, "chat_template", None):
        tok.chat_template = CHAT_TEMPLATE
    return tok


def vocab_size_for(tok, multiple: int = 8) -> int:
    """Embedding rows needed for `tok`, rounded up to `multiple`."""
    n = len(tok)
    return -(-n // multiple) * multiple
