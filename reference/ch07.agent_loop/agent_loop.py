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
#    只有这样 `formatted_turns` 才加一。规范标签就是下面给出的 `CANONICAL` 正则的一个匹配（标签区分大小写、必须有方括号、
#    恰好 5 个字母）。
# 2. `env_message(reply, answer, turn, guessed_words)`：回复中的猜测是**最后一个**规范匹配。`guessed_words` 是之前各轮
#    猜过的单词列表。
#    - 没有猜测 → `"\n" + INVALID_MOVE`；已经猜过（不区分大小写）→ `"\n" + REPEATED_MOVE.format(word=guess)`（小写的猜测）；
#    - 否则 `"\n" + 空格分隔的大写猜测 + "\n" + G/Y/X 反馈`；
#    - 三种情况最后都接 `"\nYou have {6−turn} guesses left."`，`turn` 为刚完成的轮次（从 1 开始），无效回复同样占一轮。
# 3. `game_over(reply, answer, turn, remaining_tokens)`：空回复（只有空白字符也算空）、猜对（回复的**最后一个**规范猜测，
#    转小写后等于 `answer`）、`turn ≥ 6` 或 token 预算用尽（`remaining_tokens ≤ 0`）时结束。
# 4. `build_response(segments, response_length=4096)`：模型 token 的 mask 为 1，环境 token（原样追加的
#    `<|im_start|>user …<|im_start|>assistant`）为 0；截断到 4096。
# `REPEATED_MOVE` 的措辞是课程原文的转述，以本 notebook 中的常量为准。
#
# ---
#
# ## Rules
# 1. `has_canonical_format(reply)`: exactly one canonical `<guess>[word]</guess>` **and** exactly one opening `<guess`
#    (case-insensitive). Only then does `formatted_turns` increase. A canonical tag is a match of the given
#    `CANONICAL` regex (case-sensitive tags, brackets required, exactly 5 letters).
# 2. `env_message(reply, answer, turn, guessed_words)`: the guess is the **last** canonical match of the reply.
#    `guessed_words` is the list of words guessed in earlier turns.
#    - no guess → `"\n" + INVALID_MOVE`; already guessed (any case) → `"\n" + REPEATED_MOVE.format(word=guess)`
#      (the lowercased guess);
#    - otherwise `"\n" + spaced uppercase guess + "\n" + G/Y/X feedback`;
#    - all three end with `"\nYou have {6−turn} guesses left."`, where `turn` is the turn just played (1-based);
#      an invalid reply spends its turn too.
# 3. `game_over(reply, answer, turn, remaining_tokens)`: ends on an empty reply (whitespace only counts as empty), a
#    correct guess (the reply's **last** canonical guess, lowercased, equals `answer`), `turn ≥ 6`, or an exhausted
#    token budget (`remaining_tokens ≤ 0`).
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
  'score': 6.1,
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
                        'MAX_TURNS'}]},
 {'name': 'repeat_case_sensitive',
  'score': 9.8,
  'fails': {'invalid_moves': 'any case'},
  'patch': [{'find': '    if guess in [w.lower() for w in guessed_words]:',
             'replace': '    if guess in guessed_words:'}]},
 {'name': 'whitespace_reply_continues',
  'score': 9.8,
  'fails': {'game_end': 'empty reply'},
  'patch': [{'find': '    return (not reply.strip() or extract_guess(reply) == answer',
             'replace': '    return (reply == "" or extract_guess(reply) == answer'}]}]

RULES = {'format_truth_table': [{'id': 'one_canonical',
                         'stated': 'exactly one canonical `<guess>[word]</guess>`',
                         'hint': {'en': 'A well-formatted reply has exactly one canonical '
                                        '<guess>[word]</guess> tag.',
                                  'zh': '格式正确的回复恰好有一个规范的 <guess>[word]</guess> 标签。'}},
                        {'id': 'canonical_regex',
                         'stated': 'A canonical tag is a match of the given `CANONICAL` regex',
                         'hint': {'en': 'Canonical means a match of the given CANONICAL regex: '
                                        'case-sensitive tags, brackets, exactly 5 letters.',
                                  'zh': '规范指给定 CANONICAL 正则的匹配：标签区分大小写、有方括号、恰好 5 个字母。'}},
                        {'id': 'one_open_tag',
                         'stated': 'exactly one opening `<guess`',
                         'hint': {'en': 'Count opening <guess tags case-insensitively (OPEN_TAG): exactly '
                                        'one, so a stray tag breaks the format.',
                                  'zh': '不区分大小写地统计开标签 <guess（OPEN_TAG）：必须恰好一个，多出的标签会破坏格式。'}}],
 'env_messages': [{'id': 'marks',
                   'stated': 'spaced uppercase guess',
                   'types': 'is the list of words guessed in earlier turns',
                   'hint': {'en': 'The message is newline, the spaced uppercase guess, newline, the G/Y/X '
                                  'marks, then the guesses-left line.',
                            'zh': '消息为换行、空格分隔的大写猜测、换行、G/Y/X 反馈，然后是剩余次数那一行。'}},
                  {'id': 'uppercase',
                   'stated': 'spaced uppercase guess',
                   'types': 'is the list of words guessed in earlier turns',
                   'hint': {'en': 'The guess is lowercased for the marks and shown spaced in uppercase, '
                                  'whatever case the reply used.',
                            'zh': '无论回复用什么大小写，猜测都先转小写计算反馈，并以空格分隔的大写显示。'}},
                  {'id': 'last_guess',
                   'stated': 'the guess is the **last** canonical match',
                   'types': 'is the list of words guessed in earlier turns',
                   'hint': {'en': 'With several canonical tags the guess is the last one.',
                            'zh': '有多个规范标签时，猜测是最后一个。'}},
                  {'id': 'guesses_left',
                   'stated': 'where `turn` is the turn just played (1-based)',
                   'types': 'is the list of words guessed in earlier turns',
                   'hint': {'en': "'You have N guesses left.' with N = 6 minus the turn just played (turns "
                                  'are 1-based).',
                            'zh': "'You have N guesses left.' 中 N = 6 减去刚完成的轮次（轮次从 1 开始）。"}}],
 'invalid_moves': [{'id': 'no_guess',
                    'stated': 'no guess →',
                    'hint': {'en': 'A reply with no canonical guess gives INVALID_MOVE in place of the guess '
                                   'and marks.',
                             'zh': '没有规范猜测的回复用 INVALID_MOVE 代替猜测与反馈。'}},
                   {'id': 'repeated',
                    'stated': 'already guessed (any case)',
                    'hint': {'en': 'A guess already in guessed_words, in any case, gives REPEATED_MOVE with '
                                   'the lowercased word; a new guess gets its marks.',
                             'zh': '已在 guessed_words 中（不区分大小写）的猜测给出带小写单词的 REPEATED_MOVE；新的猜测给出反馈。'}},
                   {'id': 'turn_spent',
                    'stated': 'an invalid reply spends its turn too',
                    'hint': {'en': 'An invalid reply still ends with the guesses-left line for the turn it '
                                   'spent.',
                             'zh': '无效回复同样以它所占轮次的剩余次数行结尾。'}}],
 'game_end': [{'id': 'empty',
               'stated': 'whitespace only counts as empty',
               'hint': {'en': 'An empty reply ends the game, and whitespace only counts as empty.',
                        'zh': '空回复结束游戏，只有空白字符也算空。'}},
              {'id': 'correct',
               'stated': "the reply's **last** canonical guess, lowercased, equals `answer`",
               'hint': {'en': "A correct guess ends the game: the reply's last canonical guess, lowercased, "
                              'equals the answer.',
                        'zh': '猜对结束游戏：回复中最后一个规范猜测转小写后等于答案。'}},
              {'id': 'max_turns',
               'stated': '`turn ≥ 6`',
               'hint': {'en': 'The game ends once turn reaches 6, whatever the reply (every reply uses a '
                              'turn).',
                        'zh': '轮次达到 6 时游戏结束，无论回复是什么（每次回复都占一轮）。'}},
              {'id': 'tokens',
               'stated': '(`remaining_tokens ≤ 0`)',
               'hint': {'en': 'An exhausted token budget (remaining_tokens <= 0) ends the game.',
                        'zh': 'token 预算用尽（remaining_tokens <= 0）时游戏结束。'}}],
 'response_split': [{'id': 'mask',
                     'stated': 'model tokens get mask 1, env tokens',
                     'types': '[(role, token_ids), ...] segments',
                     'hint': {'en': 'Concatenate the segments in order; assistant tokens get mask 1 and env '
                                    'tokens mask 0.',
                              'zh': '按顺序拼接各段；assistant token 的 mask 为 1，env token 为 0。'}},
                    {'id': 'cap',
                     'stated': 'capped at 4096',
                     'types': '[(role, token_ids), ...] segments',
                     'hint': {'en': 'The cap keeps the first response_length tokens of both lists.',
                              'zh': '截断保留两个列表的前 response_length 个元素。'}}]}
