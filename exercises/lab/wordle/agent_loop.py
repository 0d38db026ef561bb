"""The six-turn Wordle agent loop (the recipe's TT ``wordle_agent_loop.py``), model-agnostic.

The caller supplies the model as ``generate_fn(prompt_ids, max_tokens) -> list[int]``: vLLM on the
NPU recipe, the torch policy in ``exercises.lab.rollout`` on CPU, a scripted replay in tests.
Model tokens get mask 1, environment text gets mask 0; the response is capped at ``response_cap``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from exercises.lab.wordle.chat import IM_END, render_chat, render_env_turn
from exercises.lab.wordle.feedback import MAX_TURNS, env_message, has_canonical_format, parse_guess
from exercises.lab.wordle.prompts import initial_messages

GenerateFn = Callable[[list[int], int], list[int]]
RenderChat = Callable[[Sequence[dict[str, str]], bool], str]


class Tokenizer(Protocol):
    """All the loop needs from a tokenizer."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


def build_response(segments: Sequence[tuple[Sequence[int], int]], cap: int = 4096) -> tuple[list[int], list[int]]:
    """Concatenate (token ids, mask value) segments into response ids and mask, keeping the first ``cap``."""
    if cap < 0:
        raise ValueError(f"cap must be >= 0, got {cap}; pass the response length (4096 in the recipe)")
    ids: list[int] = []
    mask: list[int] = []
    for seg_ids, mask_value in segments:
        if mask_value not in (0, 1):
            raise ValueError(f"mask value must be 0 (env) or 1 (model), got {mask_value!r}")
        ids.extend(int(t) for t in seg_ids)
        mask.extend([mask_value] * len(seg_ids))
    return ids[:cap], mask[:cap]


@dataclass
class AgentLoopOutput:
    """One episode: what the trainer batches (ids, mask) and what the reward reads (text, extra_fields)."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    extra_fields: dict
    text: str
    num_turns: int
    turn_replies: list[str] = field(default_factory=list)


class WordleAgentLoop:
    """Plays one Wordle game per ``run``: up to ``max_turns`` replies, feedback appended between them."""

    def __init__(
        self,
        *,
        tokenizer: Tokenizer,
        max_turns: int = MAX_TURNS,
        response_cap: int = 4096,
        max_tokens_per_turn: int = 512,
        render: RenderChat = render_chat,
    ) -> None:
        if max_turns < 1 or response_cap < 1 or max_tokens_per_turn < 1:
            raise ValueError(
                "max_turns, response_cap and max_tokens_per_turn must be positive "
                f"(got {max_turns}, {response_cap}, {max_tokens_per_turn}); the recipe uses 6, 4096, 512"
            )
        self.tokenizer = tokenizer
        self.max_turns = max_turns
        self.response_cap = response_cap
        self.max_tokens_per_turn = max_tokens_per_turn
        self.render = render

    def run(
        self,
        *,
        answer: str,
        generate_fn: GenerateFn,
        messages: Sequence[dict[str, str]] | None = None,
    ) -> AgentLoopOutput:
        """Play until a correct guess, turn ``max_turns``, an empty generation or an exhausted token budget."""
        answer = answer.lower().strip()
        prompt_text = self.render(list(messages or initial_messages()), True)
        prompt_ids = list(self.tokenizer.encode(prompt_text))
        context = list(prompt_ids)
        segments: list[tuple[list[int], int]] = []
        used = 0
        turns = formatted = 0
        guessed: list[str] = []
        replies: list[str] = []
        is_correct = False

        while turns < self.max_turns:
            budget = min(self.max_tokens_per_turn, self.response_cap - used)
            if budget <= 0:
                break
            out = list(generate_fn(list(context), budget))[:budget]
            if not out:
                break
            turns += 1
            segments.append((out, 1))
            context.extend(out)
            used += len(out)
            reply = self.tokenizer.decode(out)
            replies.append(reply)
            if has_canonical_format(reply):
                formatted += 1
            guess = parse_guess(reply)
            previous = list(guessed)
            if guess is not None:
                guessed.append(guess)
            if guess == answer:
                is_correct = True
                break
            if turns >= self.max_turns:
                break
            closed = reply.rstrip().endswith(IM_END)
            env_text = render_env_turn(
                env_message(guess, answer, turns, previous, max_turns=self.max_turns),
                assistant_closed=closed,
            )
            env_ids = list(self.tokenizer.encode(env_text))
            segments.append((env_ids, 0))
            context.extend(env_ids)
            used += len(env_ids)

        response_ids, response_mask = build_response(segments, self.response_cap)
        extra_fields = {
            "answer": answer,
            "num_turns": turns,
            "formatted_turns": formatted,
            "is_correct": is_correct,
            "guessed_words": guessed,
        }
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids,
            response_mask=response_mask,
            extra_fields=extra_fields,
            text=self.tokenizer.decode(response_ids),
            num_turns=turns,
            turn_replies=replies,
        )
