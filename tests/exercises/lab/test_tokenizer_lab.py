"""The shipped character-level tokenizer: chat template, letters as single tokens, reversible encoding."""

from __future__ import annotations

from exercises.lab.checkpoint import SHIPPED_CHECKPOINT
from exercises.lab.tokenizer import build_tokenizer, load_tokenizer
from exercises.lab.wordle.chat import render_chat
from exercises.lab.wordle.prompts import initial_messages


def test_chat_template_matches_the_agent_loops_renderer():
    tok = load_tokenizer(SHIPPED_CHECKPOINT)
    rendered = tok.apply_chat_template(initial_messages(), add_generation_prompt=True, tokenize=False)
    assert rendered == render_chat(initial_messages(), True)


def test_guess_letters_are_single_tokens_and_tags_are_whole():
    tok = load_tokenizer(SHIPPED_CHECKPOINT)
    pieces = tok.convert_ids_to_tokens(tok.encode("<guess>[crane]</guess><|im_end|>", add_special_tokens=False))
    assert pieces == ["<guess>", "[", "c", "r", "a", "n", "e", "]", "</guess>", "<|im_end|>"]


def test_prompt_is_short_and_decodes_back():
    tok = load_tokenizer(SHIPPED_CHECKPOINT)
    text = render_chat(initial_messages(), True) + "<guess>[slate]</guess><|im_end|>\nYou have 5 guesses left."
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=False) == text
    assert len(tok.encode(render_chat(initial_messages(), True), add_special_tokens=False)) < 64


def test_unknown_characters_fall_back_to_unk_not_errors():
    tok = build_tokenizer()
    ids = tok.encode("é", add_special_tokens=False)
    assert tok.convert_ids_to_tokens(ids) == ["<unk>"]
