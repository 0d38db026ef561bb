"""The six-turn agent loop and response assembly, driven by a scripted policy.

The scripted ``generate_fn`` is a test double for the model (vLLM / the torch policy): it replays
canned replies so the turn accounting, masks and extra_fields can be checked exactly.
"""

import pytest
from lab_chartok import CharTokenizer

from exercises.lab.wordle.agent_loop import WordleAgentLoop, build_response
from exercises.lab.wordle.chat import render_chat
from exercises.lab.wordle.prompts import initial_messages
from exercises.lab.wordle.reward import compute_score

TOK = CharTokenizer()


def scripted(replies, calls=None):
    """A deterministic policy: the i-th call returns replies[i] + <|im_end|>, cut to max_tokens."""
    it = iter(replies)

    def generate(prompt_ids, max_tokens):
        if calls is not None:
            calls.append((len(prompt_ids), max_tokens))
        reply = next(it, "")
        return TOK.encode(reply + "<|im_end|>" if reply else "")[:max_tokens]

    return generate


def test_build_response_masks_and_cap():
    ids, mask = build_response([([1, 2, 3], 1), ([4, 5], 0), ([6], 1)], cap=10)
    assert ids == [1, 2, 3, 4, 5, 6] and mask == [1, 1, 1, 0, 0, 1]
    ids, mask = build_response([([1, 2, 3], 1), ([4, 5], 0), ([6], 1)], cap=4)
    assert ids == [1, 2, 3, 4] and mask == [1, 1, 1, 0]
    with pytest.raises(ValueError, match="mask value"):
        build_response([([1], 2)])


def test_correct_on_second_turn():
    loop = WordleAgentLoop(tokenizer=TOK)
    out = loop.run(answer="crane", generate_fn=scripted(["<guess>[crown]</guess>", "<guess>[crane]</guess>"]))
    assert out.extra_fields == {"answer": "crane", "num_turns": 2, "formatted_turns": 2,
                                "is_correct": True, "guessed_words": ["crown", "crane"]}
    assert out.prompt_ids == TOK.encode(render_chat(initial_messages(), True))
    assert out.text == (
        "<guess>[crown]</guess><|im_end|>\n<|im_start|>user\n\nC R O W N\nG G X X Y\n"
        "You have 5 guesses left.<|im_end|>\n<|im_start|>assistant\n<guess>[crane]</guess><|im_end|>"
    )
    first = TOK.encode("<guess>[crown]</guess><|im_end|>")
    assert out.response_mask[: len(first)] == [1] * len(first)
    env_len = len(out.response_ids) - 2 * len(first)
    assert out.response_mask[len(first): len(first) + env_len] == [0] * env_len
    assert out.response_mask[-len(first):] == [1] * len(first)
    score = compute_score(out.text, "crane", out.extra_fields)
    assert score["score"] == pytest.approx(1.7)


def test_six_turns_with_malformed_and_repeated_replies():
    replies = ["<guess>[slate]</guess>", "hmm", "<guess>[slate]</guess>",
               "<guess>[crown]</guess> or <guess>[brown]</guess>", "<guess>[fjord]</guess>",
               "<guess>[pious]</guess>", "<guess>[crane]</guess>"]
    loop = WordleAgentLoop(tokenizer=TOK)
    out = loop.run(answer="crane", generate_fn=scripted(replies))
    assert out.num_turns == 6 and out.extra_fields["num_turns"] == 6
    assert out.extra_fields["formatted_turns"] == 4  # turn 2 has none, turn 4 has two tags
    assert out.extra_fields["is_correct"] is False
    assert out.extra_fields["guessed_words"] == ["slate", "slate", "brown", "fjord", "pious"]
    assert "Invalid Move: No valid 5-letter guess found." in out.text
    assert "already guessed 'slate'" in out.text
    assert "You have 1 guesses left." in out.text
    assert "You have 0 guesses left." not in out.text  # nothing appended after the last turn
    assert out.text.endswith("<guess>[pious]</guess><|im_end|>")


def test_empty_generation_ends_game():
    out = WordleAgentLoop(tokenizer=TOK).run(answer="crane", generate_fn=scripted(["<guess>[slate]</guess>"]))
    assert out.num_turns == 1 and out.extra_fields["is_correct"] is False


def test_token_budget_caps_each_turn_and_the_response():
    calls = []
    long_reply = "x" * 300 + "<guess>[slate]</guess>"
    loop = WordleAgentLoop(tokenizer=TOK, response_cap=400, max_tokens_per_turn=512)
    out = loop.run(answer="crane", generate_fn=scripted([long_reply] * 6, calls))
    assert calls[0][1] == 400  # min(512, remaining)
    assert calls[1][1] == 400 - len(TOK.encode(long_reply + "<|im_end|>")) - len(
        TOK.encode("\n<|im_start|>user\n\nS L A T E\nX X G X G\nYou have 5 guesses left.<|im_end|>\n"
                   "<|im_start|>assistant\n"))
    assert len(out.response_ids) == len(out.response_mask) <= 400
    assert out.num_turns == 2


def test_truncated_reply_gets_closed_before_env_text():
    out = WordleAgentLoop(tokenizer=TOK, max_tokens_per_turn=22).run(
        answer="crane", generate_fn=scripted(["<guess>[slate]</guess> trailing", "<guess>[crane]</guess>"]))
    assert "<guess>[slate]</guess><|im_end|>\n<|im_start|>user" in out.text


def test_invalid_construction():
    with pytest.raises(ValueError, match="positive"):
        WordleAgentLoop(tokenizer=TOK, max_turns=0)
