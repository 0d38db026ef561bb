"""ch07.wordle_reward (issue #2 pilot): the Wordle reward `compute_score` and the G/Y/X feedback (COURSE.md §2)."""
from __future__ import annotations

from nbkit_ch07_08 import Check, Exercise, Mistake, code, md

G = lambda *words: " ".join(f"<guess>[{w}]</guess>" for w in words)  # noqa: E731 - canonical replies

SOLUTION_PARTS = '''
import re

CANONICAL = re.compile(r"<guess>\\s*\\[([A-Za-z]{5})\\]\\s*</guess>")   # tags case-sensitive, brackets required
OPEN_TAG = re.compile(r"<guess\\b", re.IGNORECASE)                    # any opening tag, any case


def feedback(guess, answer):
    """G/Y/X marks for one guess: greens are consumed first, then each yellow takes one unused letter."""
    guess, answer = guess.lower(), answer.lower()
    marks = ["X"] * len(guess)
    unused = []
    for i, (g, a) in enumerate(zip(guess, answer)):
        if g == a:
            marks[i] = "G"
        else:
            unused.append(a)
    for i, g in enumerate(guess):
        if marks[i] != "G" and g in unused:
            marks[i] = "Y"
            unused.remove(g)
    return " ".join(marks)


def partial_answer(guesses, answer):
    """Best 0.2*greens + 0.1*yellows over the guesses; guesses of the wrong length are skipped."""
    best = 0.0
    for guess in guesses:
        if len(guess) != len(answer):
            continue
        marks = feedback(guess, answer).split()
        best = max(best, 0.2 * marks.count("G") + 0.1 * marks.count("Y"))
    return best
'''

SOLUTION_SCORE = '''
def _count(value, minimum):
    """An int-like count (not a bool) that is >= minimum, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < minimum:
        return None
    return int(value)


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    text = solution_str or ""
    answer = str(ground_truth).lower().strip()
    guesses = [g.lower() for g in CANONICAL.findall(text)]
    open_tags = len(OPEN_TAG.findall(text))
    info = extra_info or {}

    correct = 1.0 if guesses and guesses[-1] == answer else 0.0
    partial = 0.0 if correct else partial_answer(guesses, answer)
    num_turns = _count(info.get("num_turns"), 1)
    if num_turns is None:
        num_turns = max(open_tags, len(guesses))
    length_bonus = 1.0 / max(num_turns, 1) if correct else 0.0
    formatted = _count(info.get("formatted_turns"), 0)
    formatted = min(len(guesses), num_turns) if formatted is None else min(formatted, num_turns)
    fmt = min(formatted / num_turns, 1.0) if num_turns > 0 else 0.0
    return {"score": correct + partial + length_bonus + 0.2 * fmt, "correct": correct, "partial": partial,
            "length_bonus": length_bonus, "format": fmt, "num_guesses": len(guesses)}
'''

TEMPLATE_PARTS = '''
import re

CANONICAL = re.compile(r"<guess>\\s*\\[([A-Za-z]{5})\\]\\s*</guess>")
OPEN_TAG = re.compile(r"<guess\\b", re.IGNORECASE)


def feedback(guess, answer):
    """Return the marks for one guess, e.g. feedback("crown", "crane") == "G G X X Y"."""
    raise NotImplementedError("implement feedback(guess, answer)")


def partial_answer(guesses, answer):
    """Return max over guesses of 0.2*greens + 0.1*yellows (skip guesses of the wrong length)."""
    raise NotImplementedError("implement partial_answer(guesses, answer)")
'''

TEMPLATE_SCORE = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """Return {"score", "correct", "partial", "length_bonus", "format", "num_guesses"}."""
    raise NotImplementedError("implement compute_score")
'''

# Typical mistakes -------------------------------------------------------------------------------------
YELLOWS_FIRST = SOLUTION_PARTS.replace('''    marks = ["X"] * len(guess)
    unused = []
    for i, (g, a) in enumerate(zip(guess, answer)):
        if g == a:
            marks[i] = "G"
        else:
            unused.append(a)
    for i, g in enumerate(guess):
        if marks[i] != "G" and g in unused:
            marks[i] = "Y"
            unused.remove(g)
    return " ".join(marks)''', '''    marks = []
    unused = list(answer)
    for g, a in zip(guess, answer):  # one pass: a yellow may take a letter a later green needs
        if g == a:
            marks.append("G")
            if g in unused:
                unused.remove(g)
        elif g in unused:
            marks.append("Y")
            unused.remove(g)
        else:
            marks.append("X")
    return " ".join(marks)''')

TAG_TURNS = SOLUTION_SCORE.replace('''    num_turns = _count(info.get("num_turns"), 1)
    if num_turns is None:
        num_turns = max(open_tags, len(guesses))''', '''    num_turns = max(open_tags, len(guesses))  # counts tags in the text only''')

FIRST_GUESS = SOLUTION_SCORE.replace("guesses[-1] == answer", "guesses[0] == answer")

for _m in (YELLOWS_FIRST, TAG_TURNS, FIRST_GUESS):
    assert _m not in (SOLUTION_PARTS, SOLUTION_SCORE), "mistake patch did not apply"

# Cases -----------------------------------------------------------------------------------------------
PUBLIC = [  # the seven course tests ([R] tests/test_wordle_reward.py); #3 is a partial_answer case
    ("1: apple, crane -> crane, turns 2/2", ["wordle", G("apple", "crane"), "crane",
                                              {"num_turns": 2, "formatted_turns": 2}]),
    ("2: crown, vivid -> crane", ["wordle", G("crown", "vivid"), "crane", None]),
    ("4: one formatted turn missing (2/1)", ["wordle", G("vivid") + " <guess>vivid</guess>", "crane",
                                             {"num_turns": 2, "formatted_turns": 1}]),
    ("5: no brackets", ["wordle", "<guess>crane</guess>", "crane", None]),
    ("6: two tags, turns 1/0", ["wordle", G("slate", "crane"), "crane", {"num_turns": 1, "formatted_turns": 0}]),
    ("7: empty text", ["wordle", "", "crane", None]),
]
HIDDEN = [
    ["wordle", "<think>c first</think>" + G("crane"), "crane", {"num_turns": 1, "formatted_turns": 1}],
    ["wordle", G("slate", "crane", "brace"), "grace", {"num_turns": 3, "formatted_turns": 3}],
    ["wordle", G("speed", "erase"), "geese", {"num_turns": 6, "formatted_turns": 2}],
    ["wordle", G("stare") + " <GUESS>oops</GUESS> " + G("crane"), "crane", None],
    ["wordle", "<guess> [CRANE] </guess>", " Crane ", None],
    ["wordle", G("lever", "eerie"), "eerie", {"num_turns": 4, "formatted_turns": 2}],
    ["wordle", "<Guess>[crane]</Guess> " + G("crate"), "crane", {"num_turns": 2, "formatted_turns": 1}],
]
TURNS = [
    ["wordle", G("crane"), "crane", {"num_turns": 4, "formatted_turns": 1}],
    ["wordle", G("speed", "erase"), "geese", {"num_turns": 6}],
    ["wordle", G("crane"), "crane", {"num_turns": True, "formatted_turns": 1}],
    ["wordle", G("slate", "crane"), "crane", {"num_turns": 0, "formatted_turns": 2}],
    ["wordle", G("slate", "crane"), "crane", {"num_turns": 3, "formatted_turns": 9}],
    ["wordle", G("slate") + " <guess>crane</guess>", "crane", {"formatted_turns": -1}],
    ["wordle", G("stare", "crane"), "crane", {"num_turns": 5, "formatted_turns": False}],
]
LAST = [
    ["wordle", G("crane", "slate"), "crane", {"num_turns": 2, "formatted_turns": 2}],
    ["wordle", G("apple", "crane"), "crane", {"num_turns": 2, "formatted_turns": 2}],
    ["wordle", G("geese", "speed", "geese"), "geese", {"num_turns": 3, "formatted_turns": 3}],
]
PARTIAL = [("3: allee -> apple", [["allee"], "apple"])] + [
    (None, a) for a in ([["speed", "erase"], "geese"], [["lever"], "eerie"], [["eerie", "level"], "lever"],
                        [["sassy", "cress"], "asses"], [["toolong", "robot"], "boots"], [[], "crane"],
                        [["erase"], "crane"], [["nanny", "alarm"], "canny"], [["geese"], "slate"])]
FEEDBACK = [("crown -> crane", ["crown", "crane"])] + [
    (None, a) for a in (["speed", "geese"], ["lever", "eerie"], ["allee", "apple"], ["sassy", "asses"],
                        ["CRANE", "crane"], ["eerie", "lever"], ["eerie", "crane"], ["spree", "grace"],
                        ["nanny", "canny"], ["lolly", "hello"])]


def _calls(cases, public):
    return [{"args": a, "public": public, **({"label": lab} if lab else {})} for lab, a in cases]


def spec() -> Exercise:
    checks = [
        Check("public_cases", "compute_score", "function", 2, "The course's public reward tests", "课程公开奖励测试",
              "Compare each failing public case with the formula score = correct + partial + length_bonus + "
              "0.2*format.", "对照公式 score = correct + partial + length_bonus + 0.2*format 检查未通过的公开用例。",
              calls=_calls(PUBLIC, True), options={"compare": "numeric", "rtol": 0, "atol": 1e-9}),
        Check("hidden_cases", "compute_score", "function", 2, "Hidden reward cases", "隐藏奖励用例",
              "Some hidden replies score wrongly: the canonical regex is case-sensitive and needs brackets, the "
              "open-tag count is case-insensitive, ground_truth is lowercased and stripped.",
              "部分隐藏回复得分不对：规范正则区分大小写且必须有方括号，开标签计数不区分大小写，ground_truth 需小写并去空白。",
              calls=_calls([(None, a) for a in HIDDEN], False), options={"compare": "numeric", "rtol": 0, "atol": 1e-9}),
        Check("turn_accounting", "compute_score", "function", 2, "num_turns and formatted_turns from extra_info",
              "从 extra_info 读取 num_turns 与 formatted_turns",
              "Turns come from extra_info: num_turns when it is an int > 0 and not a bool, formatted_turns when it "
              "is an int >= 0 and not a bool (capped at num_turns); only otherwise count tags in the text.",
              "轮数来自 extra_info：num_turns 须为大于 0 的整数且不是 bool，formatted_turns 须为不小于 0 的整数且不是 bool"
              "（不超过 num_turns）；只有不满足时才回退到数文本中的标签。",
              calls=_calls([(None, a) for a in TURNS], False), options={"compare": "numeric", "rtol": 0, "atol": 1e-9}),
        Check("last_guess", "compute_score", "function", 1, "correct uses the last guess", "correct 只看最后一次猜测",
              "correct compares the last canonical guess with the answer, not the first one; an earlier hit only "
              "counts as partial credit.", "correct 比较的是最后一个规范猜测，而不是第一个；之前猜中只计入 partial。",
              calls=_calls([(None, a) for a in LAST], False), options={"compare": "numeric", "rtol": 0, "atol": 1e-9}),
        Check("partial_credit", "partial_answer", "function", 1.5, "partial_answer", "partial_answer 部分分",
              "Count greens first and remove them from the answer's letters; only then may each yellow take one "
              "unused matching letter.", "先数绿色并从答案字母中移除；之后每个黄色才各占用一个尚未使用的相同字母。",
              calls=_calls(PARTIAL, True)[:1] + _calls(PARTIAL[1:], False),
              options={"compare": "numeric", "rtol": 0, "atol": 1e-9}),
        Check("feedback_string", "feedback", "function", 1.5, "G/Y/X feedback string", "G/Y/X 反馈字符串",
              "Mark greens first, then yellows from the letters the greens left unused; the result is five marks "
              "separated by single spaces.", "先标绿色，再用绿色未占用的字母标黄色；结果是用单个空格分隔的五个标记。",
              calls=_calls(FEEDBACK[:1], True) + _calls(FEEDBACK[1:], False), options={"compare": "exact"}),
    ]
    intro = [
        md("""
        # 第 7 章 · 练习：Wordle 奖励函数 `compute_score`

        切换到 TorchTitan 后，奖励函数**保持不变**：`wordle_reward.py::compute_score` 给每条多轮回复打分。
        本练习要你重写它，并实现每轮反馈字符串 `feedback(guess, answer)`（如 `crown` 对 `crane` 得到 `G G X X Y`）。
        """, """
        # Chapter 7 · Exercise: the Wordle reward `compute_score`

        Switching the backend to TorchTitan leaves the reward **unchanged**: `wordle_reward.py::compute_score` scores
        each multi-turn reply. Re-implement it, plus the per-turn feedback string `feedback(guess, answer)`
        (`crown` against `crane` gives `G G X X Y`).
        """),
        md("""
        ## 规则
        - 规范猜测：正则 `<guess>\\s*\\[([A-Za-z]{5})\\]\\s*</guess>`（标签区分大小写、必须有方括号，单词转小写）。
          开标签 `<guess\\b` 不区分大小写。
        - `correct = 1`：当**最后一个**规范猜测等于 `ground_truth.lower().strip()`。
        - `partial`：correct 时为 0，否则为所有猜测中 `0.2·绿 + 0.1·黄` 的最大值。先消耗绿色，每个黄色占用第一个未使用的相同字母；长度不对的猜测跳过。
        - `num_turns`：`extra_info["num_turns"]` 为整数、不是 bool 且 > 0 时取之，否则为 `max(开标签数, 猜测数)`。
        - `length_bonus = 1/max(num_turns,1)`（仅 correct 时），否则 0。
        - `formatted`：`extra_info["formatted_turns"]` 为整数、不是 bool 且 ≥ 0 时取之（不超过 num_turns），否则 `min(规范猜测数, num_turns)`。
        - `format = min(formatted/num_turns, 1)`，num_turns 为 0 时为 0。
        - **score = correct + partial + length_bonus + 0.2·format**，范围 [0, 2.2]。
        返回字典：`score, correct, partial, length_bonus, format, num_guesses`。
        """, """
        ## Rules
        - Canonical guess: regex `<guess>\\s*\\[([A-Za-z]{5})\\]\\s*</guess>` (case-sensitive tags, brackets required,
          the word is lowercased). The open tag `<guess\\b` is matched case-insensitively.
        - `correct = 1` if the **last** canonical guess equals `ground_truth.lower().strip()`.
        - `partial`: 0 if correct, else the maximum over guesses of `0.2·greens + 0.1·yellows`. Greens are consumed
          first; each yellow consumes the first unused matching letter. Guesses of the wrong length are skipped.
        - `num_turns` = `extra_info["num_turns"]` if int-like, not a bool and > 0; otherwise `max(#open tags, #guesses)`.
        - `length_bonus = 1/max(num_turns, 1)` if correct, else 0.
        - `formatted` = `extra_info["formatted_turns"]` if int-like, not a bool and ≥ 0, capped at num_turns; otherwise
          `min(#canonical, num_turns)`.
        - `format = min(formatted/num_turns, 1)`, or 0 when num_turns is 0.
        - **score = correct + partial + length_bonus + 0.2·format**, range [0, 2.2].
        Return a dict with `score, correct, partial, length_bonus, format, num_guesses`.
        """),
        md("## 任务 1：`feedback` 与 `partial_answer`", "## Task 1: `feedback` and `partial_answer`"),
    ]
    after = [
        md("## 自查（仅公开用例；评分还会用隐藏用例）", "## Self-check (public cases only; grading also uses hidden cases)"),
        code(SELF_CHECK),
    ]
    score_md = md("## 任务 2：`compute_score`", "## Task 2: `compute_score`")
    return Exercise(
        id="ch07.wordle_reward", title_en="Implement the Wordle reward", title_zh="实现 Wordle 奖励函数",
        summary_en="compute_score and the G/Y/X feedback of the course's Wordle environment",
        summary_zh="课程 Wordle 环境的 compute_score 与 G/Y/X 反馈",
        kernel_family="light",
        answers=[("compute_score", "function"), ("partial_answer", "function"), ("feedback", "function")],
        checks=checks, intro=intro,
        answer_cells={"parts": (TEMPLATE_PARTS, SOLUTION_PARTS), "score": (TEMPLATE_SCORE, SOLUTION_SCORE)},
        after=after,
        mistakes=[
            Mistake("yellows_before_greens", {"parts": YELLOWS_FIRST},
                    {"partial_credit": "greens first", "feedback_string": "greens first"}),
            Mistake("turns_from_tags", {"score": TAG_TURNS}, {"turn_accounting": "extra_info"}),
            Mistake("first_guess", {"score": FIRST_GUESS}, {"last_guess": "last canonical guess"}),
        ],
        insert_before={"score": score_md},
    )


SELF_CHECK = '''
def _show(label, got_fn, want):
    """Print one public example: ✓ when it matches, otherwise what came back."""
    try:
        got = got_fn()
    except NotImplementedError:
        print("…", label, "- not implemented yet")
        return
    except Exception as exc:  # show the learner their own error
        print("✗", label, "- raised", type(exc).__name__, exc)
        return
    ok = abs(got - want) < 1e-9 if isinstance(want, float) else got == want
    print("✓" if ok else "✗", label, "" if ok else f"- got {got!r}, want {want!r}")


G = lambda *words: " ".join(f"<guess>[{w}]</guess>" for w in words)
_show("1: apple, crane -> crane (2/2) score", lambda: compute_score("wordle", G("apple", "crane"), "crane",
      {"num_turns": 2, "formatted_turns": 2})["score"], 1.7)
_show("2: crown, vivid -> crane partial", lambda: compute_score("wordle", G("crown", "vivid"), "crane")["partial"], 0.5)
_show("2: crown, vivid -> crane score", lambda: compute_score("wordle", G("crown", "vivid"), "crane")["score"], 0.7)
_show("3: partial_answer(['allee'], 'apple')", lambda: partial_answer(["allee"], "apple"), 0.5)
_show("4: one formatted turn missing (2/1) score", lambda: compute_score("wordle", G("vivid") + " <guess>vivid</guess>",
      "crane", {"num_turns": 2, "formatted_turns": 1})["score"], 0.1)
_show("5: <guess>crane</guess> num_guesses", lambda: compute_score("wordle", "<guess>crane</guess>", "crane")["num_guesses"], 0)
_show("6: two tags, turns 1/0 format", lambda: compute_score("wordle", G("slate", "crane"), "crane",
      {"num_turns": 1, "formatted_turns": 0})["format"], 0.0)
_show("7: empty text score", lambda: compute_score("wordle", "", "crane")["score"], 0.0)
_show("feedback('crown', 'crane')", lambda: feedback("crown", "crane"), "G G X X Y")
'''
