# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   language_info:
#     name: python
# ---

# %% [markdown]
# # 第 7 章 · 练习：Wordle 智能体循环
#
# TorchTitan 版本的 `wordle_agent_loop.py` 与 FSDP 版本的语义相同：最多 6 轮（`multi_turn.max_user_turns`），
# 每次回复（包括格式错误的回复）都占用一轮。本练习实现循环中的四个纯函数。
#
# ---
#
# # Chapter 7 · Exercise: the Wordle agent loop
#
# The TorchTitan `wordle_agent_loop.py` keeps the FSDP loop's semantics: at most 6 turns
# (`multi_turn.max_user_turns`), and every reply uses a turn, malformed ones included. Implement four pure
# functions of that loop.

# %% [markdown]
# ## 规则
# 1. `has_canonical_format(reply)`：恰好一个规范标签 `<guess>[word]</guess>` **且**恰好一个开标签 `<guess`（不区分大小写）。
#    只有这样 `formatted_turns` 才加一。
# 2. `env_message(reply, answer, turn, guessed_words)`：回复中的猜测是**最后一个**规范匹配。
#    - 没有猜测 → `"\n" + INVALID_MOVE`；已经猜过（不区分大小写）→ `"\n" + REPEATED_MOVE.format(word=guess)`；
#    - 否则 `"\n" + 空格分隔的大写猜测 + "\n" + G/Y/X 反馈`；
#    - 三种情况最后都接 `"\nYou have {6−turn} guesses left."`，`turn` 为刚完成的轮次（从 1 开始），无效回复同样占一轮。
# 3. `game_over(reply, answer, turn, remaining_tokens)`：空回复、猜对、`turn ≥ 6` 或 token 预算用尽时结束。
# 4. `build_response(segments, response_length=4096)`：模型 token 的 mask 为 1，环境 token（原样追加的
#    `<|im_start|>user …<|im_start|>assistant`）为 0；截断到 4096。
# `REPEATED_MOVE` 的措辞是课程原文的转述，以本 notebook 中的常量为准。
#
# ---
#
# ## Rules
# 1. `has_canonical_format(reply)`: exactly one canonical `<guess>[word]</guess>` **and** exactly one opening `<guess`
#    (case-insensitive). Only then does `formatted_turns` increase.
# 2. `env_message(reply, answer, turn, guessed_words)`: the guess is the **last** canonical match of the reply.
#    - no guess → `"\n" + INVALID_MOVE`; already guessed (any case) → `"\n" + REPEATED_MOVE.format(word=guess)`;
#    - otherwise `"\n" + spaced uppercase guess + "\n" + G/Y/X feedback`;
#    - all three end with `"\nYou have {6−turn} guesses left."`, where `turn` is the turn just played (1-based);
#      an invalid reply spends its turn too.
# 3. `game_over(reply, answer, turn, remaining_tokens)`: ends on an empty reply, a correct guess, `turn ≥ 6`, or an
#    exhausted token budget.
# 4. `build_response(segments, response_length=4096)`: model tokens get mask 1, env tokens (appended raw,
#    `<|im_start|>user … <|im_start|>assistant`) mask 0; capped at 4096.
# The wording of `REPEATED_MOVE` paraphrases the course; the constant in this notebook is authoritative.

# %% [markdown]
# ## 已给出的辅助代码（运行即可）
#
# ---
#
# ## Given helpers (just run this cell)

# %%
import re

CANONICAL = re.compile(r"<guess>\s*\[([A-Za-z]{5})\]\s*</guess>")
OPEN_TAG = re.compile(r"<guess\b", re.IGNORECASE)
MAX_TURNS = 6            # actor_rollout_ref.rollout.multi_turn.max_user_turns
RESPONSE_LENGTH = 4096   # data.max_response_length
INVALID_MOVE = "Invalid Move: No valid 5-letter guess found. Resubmit exactly as <guess>[word]</guess>."
REPEATED_MOVE = ("You attempted an invalid move. Reason: You have already guessed '{word}' before. "
                 "Please try a different word.")


def extract_guess(reply):
    """The last canonical guess in a reply, lowercased, or None."""
    found = CANONICAL.findall(reply or "")
    return found[-1].lower() if found else None


def feedback(guess, answer):
    """G/Y/X marks (greens consumed first), as in ch07.wordle_reward."""
    marks, unused = ["X"] * 5, [a for g, a in zip(guess, answer) if g != a]
    for i, g in enumerate(guess):
        if g == answer[i]:
            marks[i] = "G"
        elif g in unused:
            marks[i] = "Y"
            unused.remove(g)
    return " ".join(marks)

# %% [markdown]
# ## 任务
#
# ---
#
# ## Tasks

# %%
def has_canonical_format(reply):
    ### BEGIN SOLUTION
    """True only with exactly one canonical tag and exactly one opening <guess tag (any case)."""
    return len(CANONICAL.findall(reply)) == 1 and len(OPEN_TAG.findall(reply)) == 1
    ### STUB
    # """True when the reply has exactly one canonical <guess>[word]</guess> and one opening <guess tag."""
    # raise NotImplementedError("implement has_canonical_format")
    ### END SOLUTION

# %%
def env_message(reply, answer, turn, guessed_words):
    ### BEGIN SOLUTION
    """The environment's reply after assistant turn `turn` (1-based)."""
    guess = extract_guess(reply)
    left = f"You have {MAX_TURNS - turn} guesses left."
    if guess is None:
        return f"\n{INVALID_MOVE}\n{left}"
    if guess in [w.lower() for w in guessed_words]:
        return f"\n{REPEATED_MOVE.format(word=guess)}\n{left}"
    return f"\n{' '.join(guess.upper())}\n{feedback(guess, answer)}\n{left}"
    ### STUB
    # """The environment's message after assistant turn `turn` (1-based); see the rules above."""
    # raise NotImplementedError("implement env_message")
    ### END SOLUTION


def game_over(reply, answer, turn, remaining_tokens):
    ### BEGIN SOLUTION
    """The loop stops on an empty reply, a correct guess, the sixth turn, or an exhausted token budget."""
    return (not reply.strip() or extract_guess(reply) == answer or turn >= MAX_TURNS
            or remaining_tokens <= 0)
    ### STUB
    # """True when the game ends after this reply."""
    # raise NotImplementedError("implement game_over")
    ### END SOLUTION

# %%
def build_response(segments, response_length=RESPONSE_LENGTH):
    ### BEGIN SOLUTION
    """(response_ids, response_mask): assistant tokens masked 1, env tokens 0, the first response_length kept."""
    ids, mask = [], []
    for role, tokens in segments:
        ids += list(tokens)
        mask += [1 if role == "assistant" else 0] * len(tokens)
    return ids[:response_length], mask[:response_length]
    ### STUB
    # """Return (response_ids, response_mask) for [(role, token_ids), ...] segments."""
    # raise NotImplementedError("implement build_response")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例）
#
# ---
#
# ## Self-check (public cases only)

# %% tags=["self-check"]
from exercises.lab.selfcheck import show as _show

_show("format: one canonical tag", lambda: has_canonical_format("I think <guess>[crane]</guess>"), True)
_show("format: no brackets", lambda: has_canonical_format("<guess>crane</guess>"), False)
_show("format: two canonical tags", lambda: has_canonical_format("<guess>[crane]</guess> <guess>[slate]</guess>"), False)
_show("crown vs crane, turn 1", lambda: env_message("<guess>[crown]</guess>", "crane", 1, []),
      "\nC R O W N\nG G X X Y\nYou have 5 guesses left.")
_show("no bracketed guess", lambda: env_message("<guess>crane</guess>", "crane", 2, []),
      "\n" + INVALID_MOVE + "\nYou have 4 guesses left.")
_show("repeated guess", lambda: env_message("<guess>[crane]</guess>", "slate", 3, ["crane", "stare"]),
      "\n" + REPEATED_MOVE.format(word="crane") + "\nYou have 3 guesses left.")
_show("correct guess at turn 2 ends the game", lambda: game_over("<guess>[crane]</guess>", "crane", 2, 3000), True)
_show("wrong guess at turn 2 continues", lambda: game_over("<guess>[slate]</guess>", "crane", 2, 3000), False)
_show("two turns, cap 8", lambda: build_response([("assistant", [11, 12, 13]), ("env", [90, 91]),
                                                  ("assistant", [14, 15])], 8),
      ([11, 12, 13, 90, 91, 14, 15], [1, 1, 1, 0, 0, 1, 1]))
_show("cap cuts the third segment", lambda: build_response([("assistant", [1, 2, 3]), ("env", [7, 8, 9]),
                                                           ("assistant", [4, 5, 6])], 7),
      ([1, 2, 3, 7, 8, 9, 4], [1, 1, 1, 0, 0, 0, 1]))

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (the bulky per-check data is in cases.json next to this file), and typical mistakes as
# patches of the solution with the score and the check each must fail.
MISTAKES = [{'name': 'cap_keeps_tail',
  'score': 8.75,
  'fails': {'response_split': 'first response_length'},
  'patch': [{'find': '    return ids[:response_length], mask[:response_length]',
             'replace': '    return ids[-response_length:], mask[-response_length:]'}]},
 {'name': 'env_tokens_trained',
  'score': 7.9167,
  'fails': {'response_split': 'env tokens mask 0'},
  'patch': [{'find': '        mask += [1 if role == "assistant" else 0] * len(tokens)',
             'replace': '        mask += [1] * len(tokens)'}]},
 {'name': 'ignores_open_tags',
  'score': 9.6667,
  'fails': {'format_truth_table': 'opening <guess tag'},
  'patch': [{'find': '    return len(CANONICAL.findall(reply)) == 1 and len(OPEN_TAG.findall(reply)) == 1',
             'replace': '    return len(CANONICAL.findall(reply)) == 1'}]},
 {'name': 'turns_off_by_one',
  'score': 6.0556,
  'fails': {'env_messages': '6 minus the turn just played', 'game_end': 'turn reaches 6'},
  'patch': [{'find': '    left = f"You have {MAX_TURNS - turn} guesses left."\n'
                     '    if guess is None:\n'
                     '        return f"\\n{INVALID_MOVE}\\n{left}"\n'
                     '    if guess in [w.lower() for w in guessed_words]:\n'
                     '        return f"\\n{REPEATED_MOVE.format(word=guess)}\\n{left}"\n'
                     '    return f"\\n{\' \'.join(guess.upper())}\\n{feedback(guess, answer)}\\n{left}"\n'
                     '\n'
                     '\n'
                     'def game_over(reply, answer, turn, remaining_tokens):\n'
                     '    """The loop stops on an empty reply, a correct guess, the sixth turn, or an '
                     'exhausted token budget."""\n'
                     '    return (not reply.strip() or extract_guess(reply) == answer or turn >= MAX_TURNS',
             'replace': '    left = f"You have {MAX_TURNS - turn + 1} guesses left."\n'
                        '    if guess is None:\n'
                        '        return f"\\n{INVALID_MOVE}\\n{left}"\n'
                        '    if guess in [w.lower() for w in guessed_words]:\n'
                        '        return f"\\n{REPEATED_MOVE.format(word=guess)}\\n{left}"\n'
                        '    return f"\\n{\' \'.join(guess.upper())}\\n{feedback(guess, answer)}\\n{left}"\n'
                        '\n'
                        '\n'
                        'def game_over(reply, answer, turn, remaining_tokens):\n'
                        '    """The loop stops on an empty reply, a correct guess, the sixth turn, or an '
                        'exhausted token budget."""\n'
                        '    return (not reply.strip() or extract_guess(reply) == answer or turn > '
                        'MAX_TURNS'}]}]
