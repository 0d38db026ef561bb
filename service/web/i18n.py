"""The pages' own words in English and Chinese (feedback itself comes from the grader in the submission's language)."""
from __future__ import annotations

LANGS = ("en", "zh")
WORDS: dict[str, tuple[str, str]] = {
    "app": ("titangrade", "titangrade 评分"),
    "sign_in": ("Sign in", "登录"), "sign_out": ("Sign out", "退出"),
    "token": ("Your token", "你的令牌"),
    "token_help": ("Paste the token your instructor gave you (tg_...).", "粘贴教师发给你的令牌（tg_...）。"),
    "bad_token": ("That token is unknown, revoked or expired; ask your instructor for a new one.",
                  "令牌无效、已被吊销或已过期；请向教师申请新的令牌。"),
    "bad_form": ("The form expired or did not come from this site; reload the page and try again.",
                 "表单已过期或并非来自本站；请刷新页面后重试。"),
    "exercises": ("Exercises", "练习"), "exercise": ("Exercise", "练习"),
    "best": ("Best score", "最高分"), "latest": ("Latest", "最近一次"),
    "attempts": ("Attempts", "提交次数"), "attempts_left": ("Attempts left", "剩余次数"),
    "unlimited": ("unlimited", "不限"), "template": ("Template", "模板"), "download": ("Download", "下载"),
    "upload": ("Upload", "上传"), "submit": ("Submit notebook", "提交笔记本"),
    "your_submissions": ("Your recent submissions", "你最近的提交"),
    "submission": ("Submission", "提交"), "status": ("Status", "状态"), "score": ("Score", "得分"),
    "check": ("Check", "检查项"), "points": ("Points", "分数"), "feedback": ("Feedback", "反馈"),
    "passed": ("passed", "通过"), "failed": ("failed", "未通过"),
    "queued": ("queued", "排队中"), "running": ("running", "运行中"), "graded": ("graded", "已评分"),
    "error": ("error", "出错"), "not_gradable": ("not gradable (not counted)", "无法评分（不计入）"),
    "superseded": ("superseded", "已被取代"),
    "cell_of": ("running cell {i} of {n}", "正在运行第 {i} / {n} 个单元"),
    "checking": ("running the checks", "正在检查"), "started": ("started", "已开始"),
    "live": ("Progress", "进度"), "message": ("Message", "说明"),
    "overridden": ("set by an instructor", "由教师调整"),
    "feedback_lang": ("Feedback was written in {language} when this attempt was graded.",
                      "反馈以 {language} 生成（评分时的语言）。"),
    "plot": ("Your training run against the reference band", "你的训练曲线与参考范围"),
    "band": ("reference band", "参考范围"), "your_run": ("your run", "你的运行"),
    "no_trace": ("No metric trace was stored for this run.", "本次运行没有保存指标记录。"),
    "teach": ("Teaching", "教学"), "gradebook": ("Gradebook", "成绩册"), "csv": ("CSV", "CSV"),
    "policy": ("Policy", "计分方式"), "learner": ("Learner", "学员"), "graded_at": ("Graded at", "评分时间"),
    "stats": ("Statistics", "统计"), "histogram": ("Score histogram", "分数分布"),
    "pass_rates": ("Pass rate per check", "各检查项通过率"), "submissions": ("Submissions", "提交数"),
    "learners": ("Learners", "学员数"), "median_time": ("Median grading time", "评分耗时中位数"),
    "override": ("Override", "调整分数"), "reason": ("Reason", "原因"), "new_score": ("New score", "新分数"),
    "overrides": ("Overrides", "分数调整记录"), "regrade": ("Regrade", "重新评分"),
    "regrade_all": ("Regrade every submission of this exercise", "重新评分该练习的所有提交"),
    "queue": ("Queue health", "队列状态"), "lane": ("Lane", "队列"), "depth": ("Waiting", "等待数"),
    "workers": ("Workers", "评分节点"), "devices": ("Devices", "加速卡"), "host": ("Host", "主机"),
    "slots": ("Slots", "并发数"), "last_seen": ("Last seen", "最近心跳"),
    "recent_not_gradable": ("Recent not-gradable submissions", "最近无法评分的提交"),
    "none": ("none", "无"), "course": ("Course", "课程"), "back": ("Back", "返回"),
    "done_regrade": ("{n} run(s) queued.", "已排队 {n} 次评分。"),
    "saved": ("Saved.", "已保存。"),
}


def t(key: str, lang: str, **values: object) -> str:
    en, zh = WORDS.get(key, (key, key))
    text = zh if lang == "zh" else en
    return text.format(**values) if values else text
