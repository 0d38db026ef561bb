"""ch07.agent_loop: the six-turn Wordle agent loop's env messages, format detection and response split (§2)."""
from __future__ import annotations

from nbkit_ch07_08 import Check, Exercise, Mistake, code, md

GIVEN = '''
import re

CANONICAL = re.compile(r"<guess>\\s*\\[([A-Za-z]{5})\\]\\s*</guess>")
OPEN_TAG = re.compile(r"<guess\\b", re.IGNORECASE)
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
'''

SOL_FORMAT = '''
def has_canonical_format(reply):
    """True only with exactly one canonical tag and exactly one opening <guess tag (any case)."""
    return len(CANONICAL.findall(reply)) == 1 and len(OPEN_TAG.findall(reply)) == 1
'''
SOL_ENV = '''
def env_message(reply, answer, turn, guessed_words):
    """The environment's reply after assistant turn `turn` (1-based)."""
    guess = extract_guess(reply)
    left = f"You have {MAX_TURNS - turn} guesses left."
    if guess is None:
        return f"\\n{INVALID_MOVE}\\n{left}"
    if guess in [w.lower() for w in guessed_words]:
        return f"\\n{REPEATED_MOVE.format(word=guess)}\\n{left}"
    return f"\\n{' '.join(guess.upper())}\\n{feedback(guess, answer)}\\n{left}"


def game_over(reply, answer, turn, remaining_tokens):
    """The loop stops on an empty reply, a correct guess, the sixth turn, or an exhausted token budget."""
    return (not reply.strip() or extract_guess(reply) == answer or turn >= MAX_TURNS
            or remaining_tokens <= 0)
'''
SOL_SPLIT = '''
def build_response(segments, response_length=RESPONSE_LENGTH):
    """(response_ids, response_mask): assistant tokens masked 1, env tokens 0, the first response_length kept."""
    ids, mask = [], []
    for role, tokens in segments:
        ids += list(tokens)
        mask += [1 if role == "assistant" else 0] * len(tokens)
    return ids[:response_length], mask[:response_length]
'''
TPL_FORMAT = '''
def has_canonical_format(reply):
    """True when the reply has exactly one canonical <guess>[word]</guess> and one opening <guess tag."""
    raise NotImplementedError("implement has_canonical_format")
'''
TPL_ENV = '''
def env_message(reply, answer, turn, guessed_words):
    """The environment's message after assistant turn `turn` (1-based); see the rules above."""
    raise NotImplementedError("implement env_message")


def game_over(reply, answer, turn, remaining_tokens):
    """True when the game ends after this reply."""
    raise NotImplementedError("implement game_over")
'''
TPL_SPLIT = '''
def build_response(segments, response_length=RESPONSE_LENGTH):
    """Return (response_ids, response_mask) for [(role, token_ids), ...] segments."""
    raise NotImplementedError("implement build_response")
'''

OFF_BY_ONE = SOL_ENV.replace("{MAX_TURNS - turn} guesses", "{MAX_TURNS - turn + 1} guesses").replace(
    "turn >= MAX_TURNS", "turn > MAX_TURNS")
ONLY_CANONICAL = SOL_FORMAT.replace(" and len(OPEN_TAG.findall(reply)) == 1", "")
TAIL_CAP = SOL_SPLIT.replace("return ids[:response_length], mask[:response_length]",
                             "return ids[-response_length:], mask[-response_length:]")
ENV_MASKED = SOL_SPLIT.replace('[1 if role == "assistant" else 0]', "[1]")
assert len({OFF_BY_ONE, SOL_ENV}) == 2 and ONLY_CANONICAL != SOL_FORMAT and TAIL_CAP != SOL_SPLIT != ENV_MASKED

FORMAT_CASES = [("one canonical tag", ["I think <guess>[crane]</guess>"]), ("no brackets", ["<guess>crane</guess>"]),
                ("two canonical tags", ["<guess>[crane]</guess> <guess>[slate]</guess>"])]
FORMAT_HIDDEN = ["<guess>[crane]</guess> and later <Guess>oops", "<GUESS>[crane]</GUESS>", "<guess>\n[CRANE]\n</guess>",
                 "<guess>[cranes]</guess>", "", "<guess>[crane]</guess> <guess>crane</guess>", "<guess >[crane]</guess>",
                 "<think>maybe crane</think>\n<guess> [slate] </guess>", "<guess>[ crane ]</guess>"]
ENV_PUBLIC = [("crown vs crane, turn 1", ["<guess>[crown]</guess>", "crane", 1, []])]
ENV_HIDDEN = [["<guess>[speed]</guess>", "geese", 3, ["crane", "slate"]], ["<guess>[LEVER]</guess>", "eerie", 2, ["crane"]],
              ["<guess>[crane]</guess> no, <guess>[allee]</guess>", "apple", 5, ["crane"]],
              ["<guess>[slate]</guess>", "grace", 4, ["crane", "brace", "trace"]]]
INVALID_PUBLIC = [("no bracketed guess", ["<guess>crane</guess>", "crane", 2, []]),
                  ("repeated guess", ["<guess>[crane]</guess>", "slate", 3, ["crane", "stare"]])]
INVALID_HIDDEN = [["", "crane", 1, []], ["<guess>[SLATE]</guess>", "crane", 4, ["Slate"]],
                  ["<guess>[grace]</guess>", "grace", 2, ["crane"]]]
END_PUBLIC = [("correct guess at turn 2", ["<guess>[crane]</guess>", "crane", 2, 3000]),
              ("wrong guess at turn 2", ["<guess>[slate]</guess>", "crane", 2, 3000])]
END_HIDDEN = [["<guess>[slate]</guess>", "crane", 6, 3000], ["<guess>[slate]</guess>", "crane", 5, 3000],
              ["   ", "crane", 1, 3000], ["<guess>[slate]</guess>", "crane", 3, 0],
              ["<guess>[crane]</guess> <guess>[slate]</guess>", "crane", 3, 100], ["<guess>crane</guess>", "crane", 6, 10],
              ["<guess>[CRANE]</guess>", "crane", 1, 4096]]
A, E = "assistant", "env"
SPLIT_PUBLIC = [("two turns, cap 8", [[[A, [11, 12, 13]], [E, [90, 91]], [A, [14, 15]]], 8]),
                ("cap cuts the third segment", [[[A, [1, 2, 3]], [E, [7, 8, 9]], [A, [4, 5, 6]]], 7])]
SPLIT_HIDDEN = [[[[A, list(range(100, 2100))], [E, list(range(5000, 5100))], [A, list(range(3000, 5100))]]],
                [[[A, [5]], [E, [6, 6]], [A, [7]], [E, [8]], [A, [9, 9, 9]]], 5],
                [[[A, [1, 2]], [E, [3]]], 10], [[], 4]]


def _calls(public, hidden):
    return ([{"args": a, "public": True, "label": lab} for lab, a in public]
            + [{"args": a if isinstance(a, list) else [a], "public": False} for a in hidden])


def spec() -> Exercise:
    exact = {"compare": "exact"}
    checks = [
        Check("format_truth_table", "has_canonical_format", "function", 2, "has_canonical_format truth table",
              "has_canonical_format 真值表",
              "A reply is well formatted only with exactly one canonical <guess>[word]</guess> AND exactly one opening "
              "<guess tag counted case-insensitively; a stray open tag breaks the format.",
              "只有恰好一个规范 <guess>[word]</guess> 且恰好一个开标签 <guess（不区分大小写计数）时才算格式正确；多余的开标签会破坏格式。",
              calls=_calls(FORMAT_CASES, FORMAT_HIDDEN), options=exact),
        Check("env_messages", "env_message", "function", 2.5, "Feedback message after a guess", "猜测后的环境消息",
              "The message is newline, the spaced uppercase guess, newline, the G/Y/X marks, then "
              "'You have N guesses left.' where N = 6 minus the turn just played (turns are 1-based).",
              "消息为：换行、空格分隔的大写猜测、换行、G/Y/X 标记，再接 'You have N guesses left.'，N = 6 减去刚完成的轮次（轮次从 1 开始）。",
              calls=_calls(ENV_PUBLIC, ENV_HIDDEN), options=exact),
        Check("invalid_moves", "env_message", "function", 1, "Invalid and repeated moves", "无效与重复猜测",
              "No canonical guess gives INVALID_MOVE; a guess already in guessed_words (any case) gives REPEATED_MOVE "
              "with the word; both replace the G/Y/X lines and still end with the guesses-left line.", "没有规范猜测时返回 INVALID_MOVE；已猜过的词（不区分大小写）返回带该词的 REPEATED_MOVE；二者替代 G/Y/X 两行，但仍以剩余次数行结尾。",
              calls=_calls(INVALID_PUBLIC, INVALID_HIDDEN), options=exact),
        Check("game_end", "game_over", "function", 2, "When the game ends", "游戏何时结束",
              "The game ends on an empty reply, a correct last guess, once turn reaches 6 (every reply uses a turn), "
              "or when no tokens remain.", "空回复、最后猜测正确、轮次达到 6（每次回复都占一轮）或 token 预算耗尽时游戏结束。",
              calls=_calls(END_PUBLIC, END_HIDDEN), options=exact),
        Check("response_split", "build_response", "function", 2.5, "response_ids / response_mask",
              "response_ids / response_mask",
              "Concatenate the segments in order; assistant tokens get mask 1 and env tokens mask 0; the cap keeps the "
              "first response_length tokens of both lists.",
              "按顺序拼接各段；助手 token 的 mask 为 1，环境 token 为 0；截断时两个列表都保留前 response_length 个。",
              calls=_calls(SPLIT_PUBLIC, SPLIT_HIDDEN), options=exact),
    ]
    intro = [
        md("""
        # 第 7 章 · 练习：Wordle 智能体循环

        TorchTitan 版本的 `wordle_agent_loop.py` 与 FSDP 版本的语义相同：最多 6 轮（`multi_turn.max_user_turns`），
        每次回复（包括格式错误的回复）都占用一轮。本练习实现循环中的四个纯函数。
        """, """
        # Chapter 7 · Exercise: the Wordle agent loop

        The TorchTitan `wordle_agent_loop.py` keeps the FSDP loop's semantics: at most 6 turns
        (`multi_turn.max_user_turns`), and every reply uses a turn, malformed ones included. Implement four pure
        functions of that loop.
        """),
        md("""
        ## 规则
        1. `has_canonical_format(reply)`：恰好一个规范标签 `<guess>[word]</guess>` **且**恰好一个开标签 `<guess`（不区分大小写）。
           只有这样 `formatted_turns` 才加一。
        2. `env_message(reply, answer, turn, guessed_words)`：回复中的猜测是**最后一个**规范匹配。
           - 没有猜测 → `"\\n" + INVALID_MOVE`；已经猜过（不区分大小写）→ `"\\n" + REPEATED_MOVE.format(word=guess)`；
           - 否则 `"\\n" + 空格分隔的大写猜测 + "\\n" + G/Y/X 反馈`；
           - 三种情况最后都接 `"\\nYou have {6−turn} guesses left."`，`turn` 为刚完成的轮次（从 1 开始），无效回复同样占一轮。
        3. `game_over(reply, answer, turn, remaining_tokens)`：空回复、猜对、`turn ≥ 6` 或 token 预算用尽时结束。
        4. `build_response(segments, response_length=4096)`：模型 token 的 mask 为 1，环境 token（原样追加的
           `<|im_start|>user …<|im_start|>assistant`）为 0；截断到 4096。
        `REPEATED_MOVE` 的措辞是课程原文的转述，以本 notebook 中的常量为准。
        """, """
        ## Rules
        1. `has_canonical_format(reply)`: exactly one canonical `<guess>[word]</guess>` **and** exactly one opening `<guess`
           (case-insensitive). Only then does `formatted_turns` increase.
        2. `env_message(reply, answer, turn, guessed_words)`: the guess is the **last** canonical match of the reply.
           - no guess → `"\\n" + INVALID_MOVE`; already guessed (any case) → `"\\n" + REPEATED_MOVE.format(word=guess)`;
           - otherwise `"\\n" + spaced uppercase guess + "\\n" + G/Y/X feedback`;
           - all three end with `"\\nYou have {6−turn} guesses left."`, where `turn` is the turn just played (1-based);
             an invalid reply spends its turn too.
        3. `game_over(reply, answer, turn, remaining_tokens)`: ends on an empty reply, a correct guess, `turn ≥ 6`, or an
           exhausted token budget.
        4. `build_response(segments, response_length=4096)`: model tokens get mask 1, env tokens (appended raw,
           `<|im_start|>user … <|im_start|>assistant`) mask 0; capped at 4096.
        The wording of `REPEATED_MOVE` paraphrases the course; the constant in this notebook is authoritative.
        """),
        md("## 已给出的辅助代码（运行即可）", "## Given helpers (just run this cell)"),
        code(GIVEN),
        md("## 任务", "## Tasks"),
    ]
    return Exercise(
        id="ch07.agent_loop", title_en="The Wordle agent loop", title_zh="Wordle 智能体循环",
        summary_en="env messages, format detection, game end and response masks of the six-turn loop",
        summary_zh="六轮循环的环境消息、格式检测、结束条件与 response mask",
        kernel_family="light", setup=GIVEN,
        answers=[("has_canonical_format", "function"), ("env_message", "function"), ("game_over", "function"),
                 ("build_response", "function")],
        checks=checks, intro=intro,
        answer_cells={"format": (TPL_FORMAT, SOL_FORMAT), "env": (TPL_ENV, SOL_ENV), "split": (TPL_SPLIT, SOL_SPLIT)},
        after=[md("## 自查（仅公开用例）", "## Self-check (public cases only)"), code(SELF_CHECK)],
        mistakes=[
            Mistake("turns_off_by_one", {"env": OFF_BY_ONE},
                    {"env_messages": "6 minus the turn just played", "game_end": "turn reaches 6"}),
            Mistake("ignores_open_tags", {"format": ONLY_CANONICAL}, {"format_truth_table": "opening <guess tag"}),
            Mistake("cap_keeps_tail", {"split": TAIL_CAP}, {"response_split": "first response_length"}),
            Mistake("env_tokens_trained", {"split": ENV_MASKED}, {"response_split": "env tokens mask 0"}),
        ],
    )


SELF_CHECK = '''
def _show(label, fn, want):
    try:
        got = fn()
    except NotImplementedError:
        return print("…", label, "- not implemented yet")
    except Exception as exc:
        return print("✗", label, "- raised", type(exc).__name__, exc)
    ok = (list(got) == list(want)) if isinstance(want, tuple) else got == want
    print("✓" if ok else "✗", label, "" if ok else f"- got {got!r}, want {want!r}")


_show("format: one canonical tag", lambda: has_canonical_format("I think <guess>[crane]</guess>"), True)
_show("format: no brackets", lambda: has_canonical_format("<guess>crane</guess>"), False)
_show("format: two canonical tags", lambda: has_canonical_format("<guess>[crane]</guess> <guess>[slate]</guess>"), False)
_show("crown vs crane, turn 1", lambda: env_message("<guess>[crown]</guess>", "crane", 1, []),
      "\\nC R O W N\\nG G X X Y\\nYou have 5 guesses left.")
_show("no bracketed guess", lambda: env_message("<guess>crane</guess>", "crane", 2, []),
      "\\n" + INVALID_MOVE + "\\nYou have 4 guesses left.")
_show("repeated guess", lambda: env_message("<guess>[crane]</guess>", "slate", 3, ["crane", "stare"]),
      "\\n" + REPEATED_MOVE.format(word="crane") + "\\nYou have 3 guesses left.")
_show("correct guess at turn 2 ends the game", lambda: game_over("<guess>[crane]</guess>", "crane", 2, 3000), True)
_show("wrong guess at turn 2 continues", lambda: game_over("<guess>[slate]</guess>", "crane", 2, 3000), False)
_show("two turns, cap 8", lambda: build_response([("assistant", [11, 12, 13]), ("env", [90, 91]),
                                                  ("assistant", [14, 15])], 8),
      ([11, 12, 13, 90, 91, 14, 15], [1, 1, 1, 0, 0, 1, 1]))
_show("cap cuts the third segment", lambda: build_response([("assistant", [1, 2, 3]), ("env", [7, 8, 9]),
                                                           ("assistant", [4, 5, 6])], 7),
      ([1, 2, 3, 7, 8, 9, 4], [1, 1, 1, 0, 0, 0, 1]))
'''
