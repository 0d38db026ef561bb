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
# # 第 7 章 · 练习：Wordle 奖励函数 `compute_score`
#
# 切换到 TorchTitan 后，奖励函数**保持不变**：`wordle_reward.py::compute_score` 给每条多轮回复打分。
# 本练习要你重写它，并实现每轮反馈字符串 `feedback(guess, answer)`（如 `crown` 对 `crane` 得到 `G G X X Y`）。
#
# ---
#
# # Chapter 7 · Exercise: the Wordle reward `compute_score`
#
# Switching the backend to TorchTitan leaves the reward **unchanged**: `wordle_reward.py::compute_score` scores
# each multi-turn reply. Re-implement it, plus the per-turn feedback string `feedback(guess, answer)`
# (`crown` against `crane` gives `G G X X Y`).

# %% [markdown]
# ## 规则
# - 规范猜测：正则 `<guess>\s*\[([A-Za-z]{5})\]\s*</guess>`（标签区分大小写、必须有方括号，单词转小写）。
#   开标签 `<guess\b` 不区分大小写。
# - `correct = 1`：当**最后一个**规范猜测等于 `ground_truth.lower().strip()`。
# - `partial`：correct 时为 0，否则为所有猜测中 `0.2·绿 + 0.1·黄` 的最大值。先消耗绿色，每个黄色占用第一个未使用的相同字母；长度不对的猜测跳过。
# - `feedback(guess, answer)` 不区分大小写：先把两个参数都转小写（`feedback("CRANE", "crane") == "G G G G G"`）。
# - `num_turns`：`extra_info["num_turns"]` 为整数、不是 bool 且 > 0 时取之，否则为 `max(开标签数, 猜测数)`。
# - `length_bonus = 1/max(num_turns,1)`（仅 correct 时），否则 0。
# - `formatted`：`extra_info["formatted_turns"]` 为整数、不是 bool 且 ≥ 0 时取之（不超过 num_turns），否则 `min(规范猜测数, num_turns)`。
# - `format = min(formatted/num_turns, 1)`，num_turns 为 0 时为 0。
# - **score = correct + partial + length_bonus + 0.2·format**，范围 [0, 2.2]。
# 返回字典：`score, correct, partial, length_bonus, format, num_guesses`。
#
# ---
#
# ## Rules
# - Canonical guess: regex `<guess>\s*\[([A-Za-z]{5})\]\s*</guess>` (case-sensitive tags, brackets required,
#   the word is lowercased). The open tag `<guess\b` is matched case-insensitively.
# - `correct = 1` if the **last** canonical guess equals `ground_truth.lower().strip()`.
# - `partial`: 0 if correct, else the maximum over guesses of `0.2·greens + 0.1·yellows`. Greens are consumed
#   first; each yellow consumes the first unused matching letter. Guesses of the wrong length are skipped.
# - `feedback(guess, answer)` ignores case: lowercase both arguments first
#   (`feedback("CRANE", "crane") == "G G G G G"`).
# - `num_turns` = `extra_info["num_turns"]` if int-like, not a bool and > 0; otherwise `max(#open tags, #guesses)`.
# - `length_bonus = 1/max(num_turns, 1)` if correct, else 0.
# - `formatted` = `extra_info["formatted_turns"]` if int-like, not a bool and ≥ 0, capped at num_turns; otherwise
#   `min(#canonical, num_turns)`.
# - `format = min(formatted/num_turns, 1)`, or 0 when num_turns is 0.
# - **score = correct + partial + length_bonus + 0.2·format**, range [0, 2.2].
# Return a dict with `score, correct, partial, length_bonus, format, num_guesses`.

# %% [markdown]
# ## 任务 1：`feedback` 与 `partial_answer`
#
# ---
#
# ## Task 1: `feedback` and `partial_answer`

# %%
import re

### BEGIN SOLUTION
CANONICAL = re.compile(r"<guess>\s*\[([A-Za-z]{5})\]\s*</guess>")   # tags case-sensitive, brackets required
OPEN_TAG = re.compile(r"<guess\b", re.IGNORECASE)                    # any opening tag, any case
### STUB
# CANONICAL = re.compile(r"<guess>\s*\[([A-Za-z]{5})\]\s*</guess>")
# OPEN_TAG = re.compile(r"<guess\b", re.IGNORECASE)
### END SOLUTION


def feedback(guess, answer):
    ### BEGIN SOLUTION
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
    ### STUB
    # """Return the marks for one guess, e.g. feedback("crown", "crane") == "G G X X Y"."""
    # raise NotImplementedError("implement feedback(guess, answer)")
    ### END SOLUTION


def partial_answer(guesses, answer):
    ### BEGIN SOLUTION
    """Best 0.2*greens + 0.1*yellows over the guesses; guesses of the wrong length are skipped."""
    best = 0.0
    for guess in guesses:
        if len(guess) != len(answer):
            continue
        marks = feedback(guess, answer).split()
        best = max(best, 0.2 * marks.count("G") + 0.1 * marks.count("Y"))
    return best
    ### STUB
    # """Return max over guesses of 0.2*greens + 0.1*yellows (skip guesses of the wrong length)."""
    # raise NotImplementedError("implement partial_answer(guesses, answer)")
    ### END SOLUTION

# %% [markdown]
# ## 任务 2：`compute_score`
#
# ---
#
# ## Task 2: `compute_score`

# %%
### BEGIN SOLUTION
def _count(value, minimum):
    """An int-like count (not a bool) that is >= minimum, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < minimum:
        return None
    return int(value)


### STUB
### END SOLUTION
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    ### BEGIN SOLUTION
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
    ### STUB
    # """Return {"score", "correct", "partial", "length_bonus", "format", "num_guesses"}."""
    # raise NotImplementedError("implement compute_score")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例；评分还会用隐藏用例）
#
# ---
#
# ## Self-check (public cases only; grading also uses hidden cases)

# %% tags=["self-check"]
from exercises.lab.selfcheck import show as _show

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

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'public_cases': {'compare': 'numeric',
                  'rtol': 0,
                  'atol': 1e-09,
                  'feedback': {'en': 'Compare each failing public case with the formula score = correct + '
                                     'partial + length_bonus + 0.2*format.',
                               'zh': '对照公式 score = correct + partial + length_bonus + 0.2*format '
                                     '检查未通过的公开用例。'},
                  'calls': [{'args': ['wordle',
                                      '<guess>[apple]</guess> <guess>[crane]</guess>',
                                      'crane',
                                      {'num_turns': 2, 'formatted_turns': 2}],
                             'public': True,
                             'label': '1: apple, crane -> crane, turns 2/2',
                             'expect': {'score': 1.7,
                                        'correct': 1.0,
                                        'partial': 0.0,
                                        'length_bonus': 0.5,
                                        'format': 1.0,
                                        'num_guesses': 2},
                             'rules': ['score']},
                            {'args': ['wordle',
                                      '<guess>[crown]</guess> <guess>[vivid]</guess>',
                                      'crane',
                                      None],
                             'public': True,
                             'label': '2: crown, vivid -> crane',
                             'expect': {'score': 0.7,
                                        'correct': 0.0,
                                        'partial': 0.5,
                                        'length_bonus': 0.0,
                                        'format': 1.0,
                                        'num_guesses': 2},
                             'rules': ['score']},
                            {'args': ['wordle',
                                      '<guess>[vivid]</guess> <guess>vivid</guess>',
                                      'crane',
                                      {'num_turns': 2, 'formatted_turns': 1}],
                             'public': True,
                             'label': '4: one formatted turn missing (2/1)',
                             'expect': {'score': 0.1,
                                        'correct': 0.0,
                                        'partial': 0.0,
                                        'length_bonus': 0.0,
                                        'format': 0.5,
                                        'num_guesses': 1},
                             'rules': ['score']},
                            {'args': ['wordle', '<guess>crane</guess>', 'crane', None],
                             'public': True,
                             'label': '5: no brackets',
                             'expect': {'score': 0.0,
                                        'correct': 0.0,
                                        'partial': 0.0,
                                        'length_bonus': 0.0,
                                        'format': 0.0,
                                        'num_guesses': 0},
                             'rules': ['score']},
                            {'args': ['wordle',
                                      '<guess>[slate]</guess> <guess>[crane]</guess>',
                                      'crane',
                                      {'num_turns': 1, 'formatted_turns': 0}],
                             'public': True,
                             'label': '6: two tags, turns 1/0',
                             'expect': {'score': 2.0,
                                        'correct': 1.0,
                                        'partial': 0.0,
                                        'length_bonus': 1.0,
                                        'format': 0.0,
                                        'num_guesses': 2},
                             'rules': ['score']},
                            {'args': ['wordle', '', 'crane', None],
                             'public': True,
                             'label': '7: empty text',
                             'expect': {'score': 0.0,
                                        'correct': 0.0,
                                        'partial': 0.0,
                                        'length_bonus': 0.0,
                                        'format': 0.0,
                                        'num_guesses': 0},
                             'rules': ['score']}]},
 'hidden_cases': {'compare': 'numeric',
                  'rtol': 0,
                  'atol': 1e-09,
                  'feedback': {'en': 'Some hidden replies score wrongly: the canonical regex is '
                                     'case-sensitive and needs brackets, the open-tag count is '
                                     'case-insensitive, ground_truth is lowercased and stripped, and partial '
                                     'credit marks greens before yellows.',
                               'zh': '部分隐藏回复得分不对：规范正则区分大小写且必须有方括号，开标签计数不区分大小写，ground_truth 需小写并去空白，partial '
                                     '先标绿色再标黄色。'},
                  'calls': [{'args': ['wordle',
                                      '<think>c first</think><guess>[crane]</guess>',
                                      'crane',
                                      {'num_turns': 1, 'formatted_turns': 1}],
                             'public': False,
                             'expect': {'score': 2.2,
                                        'correct': 1.0,
                                        'partial': 0.0,
                                        'length_bonus': 1.0,
                                        'format': 1.0,
                                        'num_guesses': 1},
                             'rules': ['score', 'length_bonus']},
                            {'args': ['wordle',
                                      '<guess>[slate]</guess> <guess>[crane]</guess> <guess>[brace]</guess>',
                                      'grace',
                                      {'num_turns': 3, 'formatted_turns': 3}],
                             'public': False,
                             'expect': {'score': 1.0,
                                        'correct': 0.0,
                                        'partial': 0.8,
                                        'length_bonus': 0.0,
                                        'format': 1.0,
                                        'num_guesses': 3},
                             'rules': ['partial', 'score']},
                            {'args': ['wordle',
                                      '<guess>[speed]</guess> <guess>[erase]</guess>',
                                      'geese',
                                      {'num_turns': 6, 'formatted_turns': 2}],
                             'public': False,
                             'expect': {'score': 0.5666666666666667,
                                        'correct': 0.0,
                                        'partial': 0.5,
                                        'length_bonus': 0.0,
                                        'format': 0.3333333333333333,
                                        'num_guesses': 2},
                             'rules': ['format', 'partial']},
                            {'args': ['wordle',
                                      '<guess>[stare]</guess> <GUESS>oops</GUESS> <guess>[crane]</guess>',
                                      'crane',
                                      None],
                             'public': False,
                             'expect': {'score': 1.4666666666666666,
                                        'correct': 1.0,
                                        'partial': 0.0,
                                        'length_bonus': 0.3333333333333333,
                                        'format': 0.6666666666666666,
                                        'num_guesses': 2},
                             'rules': ['open_tag', 'canonical', 'length_bonus']},
                            {'args': ['wordle', '<guess> [CRANE] </guess>', ' Crane ', None],
                             'public': False,
                             'expect': {'score': 2.2,
                                        'correct': 1.0,
                                        'partial': 0.0,
                                        'length_bonus': 1.0,
                                        'format': 1.0,
                                        'num_guesses': 1},
                             'rules': ['canonical', 'truth_normalised']},
                            {'args': ['wordle',
                                      '<guess>[lever]</guess> <guess>[eerie]</guess>',
                                      'eerie',
                                      {'num_turns': 4, 'formatted_turns': 2}],
                             'public': False,
                             'expect': {'score': 1.35,
                                        'correct': 1.0,
                                        'partial': 0.0,
                                        'length_bonus': 0.25,
                                        'format': 0.5,
                                        'num_guesses': 2},
                             'rules': ['length_bonus', 'format']},
                            {'args': ['wordle',
                                      '<guess>[geese]</guess>',
                                      'slate',
                                      {'num_turns': 1, 'formatted_turns': 1}],
                             'public': False,
                             'expect': {'score': 0.5,
                                        'correct': 0.0,
                                        'partial': 0.30000000000000004,
                                        'length_bonus': 0.0,
                                        'format': 1.0,
                                        'num_guesses': 1},
                             'rules': ['partial']},
                            {'args': ['wordle',
                                      '<guess>[nanny]</guess>',
                                      'canny',
                                      {'num_turns': 2, 'formatted_turns': 1}],
                             'public': False,
                             'expect': {'score': 0.9,
                                        'correct': 0.0,
                                        'partial': 0.8,
                                        'length_bonus': 0.0,
                                        'format': 0.5,
                                        'num_guesses': 1},
                             'rules': ['partial', 'format']},
                            {'args': ['wordle',
                                      '<Guess>[crane]</Guess> <guess>[crate]</guess>',
                                      'crane',
                                      {'num_turns': 2, 'formatted_turns': 1}],
                             'public': False,
                             'expect': {'score': 0.9,
                                        'correct': 0.0,
                                        'partial': 0.8,
                                        'length_bonus': 0.0,
                                        'format': 0.5,
                                        'num_guesses': 1},
                             'rules': ['canonical', 'open_tag']}]},
 'turn_accounting': {'compare': 'numeric',
                     'rtol': 0,
                     'atol': 1e-09,
                     'feedback': {'en': 'Turns come from extra_info: num_turns when it is an int > 0 and not '
                                        'a bool, formatted_turns when it is an int >= 0 and not a bool '
                                        '(capped at num_turns); only otherwise count tags in the text.',
                                  'zh': '轮数来自 extra_info：num_turns 须为大于 0 的整数且不是 bool，formatted_turns 须为不小于 '
                                        '0 的整数且不是 bool（不超过 num_turns）；只有不满足时才回退到数文本中的标签。'},
                     'calls': [{'args': ['wordle',
                                         '<guess>[crane]</guess>',
                                         'crane',
                                         {'num_turns': 4, 'formatted_turns': 1}],
                                'public': False,
                                'expect': {'score': 1.3,
                                           'correct': 1.0,
                                           'partial': 0.0,
                                           'length_bonus': 0.25,
                                           'format': 0.25,
                                           'num_guesses': 1},
                                'rules': ['num_turns_info', 'formatted_info']},
                               {'args': ['wordle',
                                         '<guess>[speed]</guess> <guess>[erase]</guess>',
                                         'geese',
                                         {'num_turns': 6}],
                                'public': False,
                                'expect': {'score': 0.5666666666666667,
                                           'correct': 0.0,
                                           'partial': 0.5,
                                           'length_bonus': 0.0,
                                           'format': 0.3333333333333333,
                                           'num_guesses': 2},
                                'rules': ['formatted_fallback']},
                               {'args': ['wordle',
                                         '<guess>[crane]</guess>',
                                         'crane',
                                         {'num_turns': True, 'formatted_turns': 1}],
                                'public': False,
                                'expect': {'score': 2.2,
                                           'correct': 1.0,
                                           'partial': 0.0,
                                           'length_bonus': 1.0,
                                           'format': 1.0,
                                           'num_guesses': 1},
                                'rules': ['num_turns_info']},
                               {'args': ['wordle',
                                         '<guess>[slate]</guess> <guess>[crane]</guess>',
                                         'crane',
                                         {'num_turns': 0, 'formatted_turns': 2}],
                                'public': False,
                                'expect': {'score': 1.7,
                                           'correct': 1.0,
                                           'partial': 0.0,
                                           'length_bonus': 0.5,
                                           'format': 1.0,
                                           'num_guesses': 2},
                                'rules': ['num_turns_info']},
                               {'args': ['wordle',
                                         '<guess>[slate]</guess> <guess>[crane]</guess>',
                                         'crane',
                                         {'num_turns': 3, 'formatted_turns': 9}],
                                'public': False,
                                'expect': {'score': 1.5333333333333332,
                                           'correct': 1.0,
                                           'partial': 0.0,
                                           'length_bonus': 0.3333333333333333,
                                           'format': 1.0,
                                           'num_guesses': 2},
                                'rules': ['formatted_cap']},
                               {'args': ['wordle',
                                         '<guess>[slate]</guess> <guess>crane</guess>',
                                         'crane',
                                         {'formatted_turns': -1}],
                                'public': False,
                                'expect': {'score': 0.5,
                                           'correct': 0.0,
                                           'partial': 0.4,
                                           'length_bonus': 0.0,
                                           'format': 0.5,
                                           'num_guesses': 1},
                                'rules': ['formatted_info', 'formatted_fallback']},
                               {'args': ['wordle',
                                         '<guess>[stare]</guess> <guess>[crane]</guess>',
                                         'crane',
                                         {'num_turns': 5, 'formatted_turns': False}],
                                'public': False,
                                'expect': {'score': 1.28,
                                           'correct': 1.0,
                                           'partial': 0.0,
                                           'length_bonus': 0.2,
                                           'format': 0.4,
                                           'num_guesses': 2},
                                'rules': ['formatted_info']}]},
 'last_guess': {'compare': 'numeric',
                'rtol': 0,
                'atol': 1e-09,
                'feedback': {'en': 'correct compares the last canonical guess with the answer, not the first '
                                   'one; an earlier hit only counts as partial credit.',
                             'zh': 'correct 比较的是最后一个规范猜测，而不是第一个；之前猜中只计入 partial。'},
                'calls': [{'args': ['wordle',
                                    '<guess>[crane]</guess> <guess>[slate]</guess>',
                                    'crane',
                                    {'num_turns': 2, 'formatted_turns': 2}],
                           'public': False,
                           'expect': {'score': 1.2,
                                      'correct': 0.0,
                                      'partial': 1.0,
                                      'length_bonus': 0.0,
                                      'format': 1.0,
                                      'num_guesses': 2},
                           'rules': ['last_guess']},
                          {'args': ['wordle',
                                    '<guess>[apple]</guess> <guess>[crane]</guess>',
                                    'crane',
                                    {'num_turns': 2, 'formatted_turns': 2}],
                           'public': False,
                           'expect': {'score': 1.7,
                                      'correct': 1.0,
                                      'partial': 0.0,
                                      'length_bonus': 0.5,
                                      'format': 1.0,
                                      'num_guesses': 2},
                           'rules': ['last_guess']},
                          {'args': ['wordle',
                                    '<guess>[geese]</guess> <guess>[speed]</guess> <guess>[geese]</guess>',
                                    'geese',
                                    {'num_turns': 3, 'formatted_turns': 3}],
                           'public': False,
                           'expect': {'score': 1.5333333333333332,
                                      'correct': 1.0,
                                      'partial': 0.0,
                                      'length_bonus': 0.3333333333333333,
                                      'format': 1.0,
                                      'num_guesses': 3},
                           'rules': ['last_guess']}]},
 'partial_credit': {'compare': 'numeric',
                    'rtol': 0,
                    'atol': 1e-09,
                    'feedback': {'en': "Count greens first and remove them from the answer's letters; only "
                                       'then may each yellow take one unused matching letter.',
                                 'zh': '先数绿色并从答案字母中移除；之后每个黄色才各占用一个尚未使用的相同字母。'},
                    'calls': [{'args': [['allee'], 'apple'],
                               'public': True,
                               'label': '3: allee -> apple',
                               'expect': 0.5,
                               'rules': ['greens_first']},
                              {'args': [['speed', 'erase'], 'geese'],
                               'public': False,
                               'expect': 0.5,
                               'rules': ['greens_first']},
                              {'args': [['lever'], 'eerie'],
                               'public': False,
                               'expect': 0.4,
                               'rules': ['greens_first']},
                              {'args': [['eerie', 'level'], 'lever'],
                               'public': False,
                               'expect': 0.8,
                               'rules': ['best_guess', 'greens_first']},
                              {'args': [['sassy', 'cress'], 'asses'],
                               'public': False,
                               'expect': 0.5,
                               'rules': ['greens_first']},
                              {'args': [['toolong', 'robot'], 'boots'],
                               'public': False,
                               'expect': 0.5,
                               'rules': ['wrong_length', 'best_guess']},
                              {'args': [[], 'crane'],
                               'public': False,
                               'expect': 0.0,
                               'rules': ['best_guess']},
                              {'args': [['erase'], 'crane'],
                               'public': False,
                               'expect': 0.6000000000000001,
                               'rules': ['greens_first']},
                              {'args': [['nanny', 'alarm'], 'canny'],
                               'public': False,
                               'expect': 0.8,
                               'rules': ['best_guess', 'greens_first']},
                              {'args': [['geese'], 'slate'],
                               'public': False,
                               'expect': 0.30000000000000004,
                               'rules': ['greens_first']},
                              {'args': [['slates'], 'slate'],
                               'public': False,
                               'expect': 0.0,
                               'rules': ['wrong_length']},
                              {'args': [['sla', 'crane'], 'slate'],
                               'public': False,
                               'expect': 0.4,
                               'rules': ['wrong_length']}]},
 'feedback_string': {'compare': 'exact',
                     'feedback': {'en': 'Mark greens first, then yellows from the letters the greens left '
                                        'unused; the result is five marks separated by single spaces.',
                                  'zh': '先标绿色，再用绿色未占用的字母标黄色；结果是用单个空格分隔的五个标记。'},
                     'calls': [{'args': ['crown', 'crane'],
                                'public': True,
                                'label': 'crown -> crane',
                                'expect': 'G G X X Y',
                                'rules': ['greens_first']},
                               {'args': ['speed', 'geese'],
                                'public': False,
                                'expect': 'Y X G Y X',
                                'rules': ['greens_first']},
                               {'args': ['lever', 'eerie'],
                                'public': False,
                                'expect': 'X G X Y Y',
                                'rules': ['greens_first']},
                               {'args': ['allee', 'apple'],
                                'public': False,
                                'expect': 'G Y X X G',
                                'rules': ['greens_first']},
                               {'args': ['sassy', 'asses'],
                                'public': False,
                                'expect': 'Y Y G Y X',
                                'rules': ['greens_first']},
                               {'args': ['CRANE', 'crane'],
                                'public': False,
                                'expect': 'G G G G G',
                                'rules': ['ignores_case']},
                               {'args': ['eerie', 'lever'],
                                'public': False,
                                'expect': 'Y G Y X X',
                                'rules': ['greens_first']},
                               {'args': ['eerie', 'crane'],
                                'public': False,
                                'expect': 'X X Y X G',
                                'rules': ['greens_first']},
                               {'args': ['spree', 'grace'],
                                'public': False,
                                'expect': 'X X Y X G',
                                'rules': ['greens_first']},
                               {'args': ['nanny', 'canny'],
                                'public': False,
                                'expect': 'X G G G G',
                                'rules': ['greens_first']},
                               {'args': ['lolly', 'hello'],
                                'public': False,
                                'expect': 'X Y G G X',
                                'rules': ['greens_first']}]}}

MISTAKES = [{'name': 'first_guess',
  'score': 7.3651,
  'fails': {'last_guess': 'last canonical guess'},
  'patch': [{'find': '    correct = 1.0 if guesses and guesses[-1] == answer else 0.0',
             'replace': '    correct = 1.0 if guesses and guesses[0] == answer else 0.0'}]},
 {'name': 'turns_from_tags',
  'score': 7.8571,
  'fails': {'turn_accounting': 'extra_info'},
  'patch': [{'find': '    num_turns = _count(info.get("num_turns"), 1)\n'
                     '    if num_turns is None:\n'
                     '        num_turns = max(open_tags, len(guesses))',
             'replace': '    num_turns = max(open_tags, len(guesses))  # counts tags in the text only'}]},
 {'name': 'yellows_before_greens',
  'score': 8.3738,
  'fails': {'feedback_string': 'greens first',
            'partial_credit': 'greens first',
            'hidden_cases': 'greens marked first'},
  'patch': [{'find': '    marks = ["X"] * len(guess)\n'
                     '    unused = []\n'
                     '    for i, (g, a) in enumerate(zip(guess, answer)):\n'
                     '        if g == a:\n'
                     '            marks[i] = "G"\n'
                     '        else:\n'
                     '            unused.append(a)\n'
                     '    for i, g in enumerate(guess):\n'
                     '        if marks[i] != "G" and g in unused:\n'
                     '            marks[i] = "Y"\n'
                     '            unused.remove(g)',
             'replace': '    marks = []\n'
                        '    unused = list(answer)\n'
                        '    for g, a in zip(guess, answer):  # one pass: a yellow may take a letter a later '
                        'green needs\n'
                        '        if g == a:\n'
                        '            marks.append("G")\n'
                        '            if g in unused:\n'
                        '                unused.remove(g)\n'
                        '        elif g in unused:\n'
                        '            marks.append("Y")\n'
                        '            unused.remove(g)\n'
                        '        else:\n'
                        '            marks.append("X")'}]},
 {'name': 'ground_truth_raw',
  'score': 9.7778,
  'fails': {'hidden_cases': 'ground_truth.lower().strip()'},
  'patch': [{'find': '    answer = str(ground_truth).lower().strip()',
             'replace': '    answer = str(ground_truth)  # compared as given'}]},
 {'name': 'format_unweighted',
  'score': 4,
  'fails': {'public_cases': '0.2*format', 'hidden_cases': '0.2*format'},
  'patch': [{'find': '"score": correct + partial + length_bonus + 0.2 * fmt',
             'replace': '"score": correct + partial + length_bonus + fmt'}]},
 {'name': 'feedback_case_sensitive',
  'score': 9.8636,
  'fails': {'feedback_string': 'feedback ignores case'},
  'patch': [{'find': '    guess, answer = guess.lower(), answer.lower()\n', 'replace': ''}]}]

RULES = {'public_cases': [{'id': 'score',
                   'stated': 'score = correct + partial + length_bonus + 0.2·format',
                   'hint': {'en': 'score = correct + partial + length_bonus + 0.2*format; compare each '
                                  'failing public case with the rules.',
                            'zh': 'score = correct + partial + length_bonus + '
                                  '0.2*format；把每个失败的公开用例与规则逐条对照。'}}],
 'hidden_cases': [{'id': 'score',
                   'stated': 'score = correct + partial + length_bonus + 0.2·format',
                   'types': 'extra_info["num_turns"]',
                   'hint': {'en': 'score = correct + partial + length_bonus + 0.2*format, each part as the '
                                  'rules define it.',
                            'zh': 'score = correct + partial + length_bonus + 0.2*format，各部分按规则计算。'}},
                  {'id': 'canonical',
                   'stated': 'case-sensitive tags, brackets required',
                   'types': 'extra_info["num_turns"]',
                   'hint': {'en': 'Only the canonical regex counts as a guess: case-sensitive tags, brackets '
                                  'required, whitespace allowed around the bracket, the word lowercased.',
                            'zh': '只有规范正则的匹配才算猜测：标签区分大小写、必须有方括号、方括号两侧允许空白，单词转小写。'}},
                  {'id': 'open_tag',
                   'stated': 'is matched case-insensitively',
                   'types': 'extra_info["num_turns"]',
                   'hint': {'en': 'Opening <guess tags are counted case-insensitively; they matter when '
                                  'num_turns comes from the text.',
                            'zh': '开标签 <guess 不区分大小写地计数；num_turns 由文本推出时要用到它。'}},
                  {'id': 'truth_normalised',
                   'stated': '`ground_truth.lower().strip()`',
                   'types': 'extra_info["num_turns"]',
                   'hint': {'en': 'Compare with ground_truth.lower().strip(), not the raw ground truth.',
                            'zh': '与 ground_truth.lower().strip() 比较，而不是原始答案。'}},
                  {'id': 'partial',
                   'stated': 'the maximum over guesses of `0.2·greens + 0.1·yellows`',
                   'types': 'extra_info["num_turns"]',
                   'hint': {'en': 'partial is 0 when correct, else the best 0.2*greens + 0.1*yellows over '
                                  'the guesses, greens marked first.',
                            'zh': 'correct 时 partial 为 0，否则为各猜测 0.2*绿 + 0.1*黄 的最大值，先标绿色。'}},
                  {'id': 'length_bonus',
                   'stated': '`length_bonus = 1/max(num_turns, 1)` if correct',
                   'types': 'extra_info["num_turns"]',
                   'hint': {'en': 'length_bonus = 1/max(num_turns, 1) only when correct.',
                            'zh': '仅在 correct 时 length_bonus = 1/max(num_turns, 1)。'}},
                  {'id': 'format',
                   'stated': '`format = min(formatted/num_turns, 1)`',
                   'types': 'extra_info["num_turns"]',
                   'hint': {'en': 'format = min(formatted/num_turns, 1), and it is weighted 0.2 in the '
                                  'score.',
                            'zh': 'format = min(formatted/num_turns, 1)，在总分中权重为 0.2。'}}],
 'turn_accounting': [{'id': 'num_turns_info',
                      'stated': 'if int-like, not a bool and > 0',
                      'types': 'extra_info["num_turns"]',
                      'hint': {'en': 'num_turns comes from extra_info when it is an int-like count > 0 and '
                                     'not a bool; only otherwise count tags.',
                               'zh': 'extra_info 中的 num_turns 为整数、不是 bool 且 > 0 时才采用；否则才数标签。'}},
                     {'id': 'formatted_info',
                      'stated': 'if int-like, not a bool and ≥ 0',
                      'types': 'extra_info["num_turns"]',
                      'hint': {'en': 'formatted_turns comes from extra_info when it is an int-like count >= '
                                     '0 and not a bool; otherwise it is counted from the text.',
                               'zh': 'extra_info 中的 formatted_turns 为整数、不是 bool 且 >= 0 时才采用；否则由文本计数。'}},
                     {'id': 'formatted_cap',
                      'stated': 'capped at num_turns',
                      'types': 'extra_info["num_turns"]',
                      'hint': {'en': 'formatted_turns from extra_info is capped at num_turns.',
                               'zh': 'extra_info 中的 formatted_turns 不超过 num_turns。'}},
                     {'id': 'formatted_fallback',
                      'stated': '`min(#canonical, num_turns)`',
                      'types': 'extra_info["num_turns"]',
                      'hint': {'en': 'Without a usable formatted_turns, formatted = min(#canonical guesses, '
                                     'num_turns).',
                               'zh': '没有可用的 formatted_turns 时，formatted = min(规范猜测数, num_turns)。'}}],
 'last_guess': [{'id': 'last_guess',
                 'stated': 'if the **last** canonical guess equals',
                 'types': 'extra_info["num_turns"]',
                 'hint': {'en': 'correct compares the last canonical guess with the answer; an earlier hit '
                                'only counts as partial credit.',
                          'zh': 'correct 比较的是最后一个规范猜测；更早猜中只算 partial。'}}],
 'partial_credit': [{'id': 'greens_first',
                     'stated': 'Greens are consumed first; each yellow consumes the first unused matching '
                               'letter',
                     'hint': {'en': "Count greens first and remove them from the answer's letters; only then "
                                    'may each yellow take one unused matching letter.',
                              'zh': '先数绿色并从答案字母中去掉；之后每个黄色才占用一个未使用的相同字母。'}},
                    {'id': 'best_guess',
                     'stated': 'the maximum over guesses',
                     'hint': {'en': 'partial_answer is the maximum over the guesses (0 for no guess), not '
                                    'the last or the sum.',
                              'zh': 'partial_answer 取各猜测中的最大值（没有猜测时为 0），不是最后一个，也不是总和。'}},
                    {'id': 'wrong_length',
                     'stated': 'Guesses of the wrong length are skipped',
                     'hint': {'en': "Guesses whose length differs from the answer's are skipped.",
                              'zh': '长度与答案不同的猜测跳过。'}}],
 'feedback_string': [{'id': 'greens_first',
                      'stated': 'Greens are consumed first; each yellow consumes the first unused matching '
                                'letter',
                      'hint': {'en': 'Mark greens first, then yellows from the letters the greens left '
                                     'unused; five marks separated by single spaces.',
                               'zh': '先标绿色，再从绿色未用的字母中标黄色；五个标记用单个空格分隔。'}},
                     {'id': 'ignores_case',
                      'stated': 'ignores case: lowercase both arguments first',
                      'hint': {'en': 'feedback ignores case: lowercase both arguments first.',
                               'zh': 'feedback 不区分大小写：先把两个参数都转小写。'}}]}

EQUIVALENT = [{'mutant': 'args_swap:c2b27384:1',
  'reason': 'partial_answer only counts the marks: greens are symmetric, and the yellow count is sum over '
            'letters of min(count in guess, count in answer) minus the greens, also symmetric, so '
            'feedback(answer, guess) has the same G and Y counts'},
 {'mutant': 'const_zero:f9da2916:2',
  'reason': 'length_bonus is only computed when correct, which needs a canonical guess, so num_turns >= 1 '
            'there and max(num_turns, 0) == max(num_turns, 1)'},
 {'mutant': 'const_inc:a044d2d1:1',
  'reason': 'formatted is capped at num_turns on both paths, so formatted / num_turns <= 1 and a cap of 2.0 '
            'instead of 1.0 is never reached'}]
