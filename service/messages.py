"""The service's words in the catalogue format of grading/messages.py: its pages (`WEB`) and the errors a
client can cause (`ERRORS`, each naming the fix). Feedback itself comes from the engine in the submission's
language. tests/service/test_service_messages.py checks both namespaces like the engine's.
"""

from __future__ import annotations

from typing import Any

from grading.messages import Catalogue, Message

WEB = Catalogue(
    "web",
    {
        "app": Message(en="titangrade", zh="titangrade 评分"),
        "sign_in": Message(en="Sign in", zh="登录"),
        "sign_out": Message(en="Sign out", zh="退出"),
        "token": Message(en="Your token", zh="你的令牌"),
        "token_help": Message(
            en="Paste the token your instructor gave you (tg_...).", zh="粘贴教师发给你的令牌（tg_...）。"
        ),
        "bad_token": Message(
            en="That token is unknown, revoked or expired; ask your instructor for a new one.",
            zh="令牌无效、已被吊销或已过期；请向教师申请新的令牌。",
        ),
        "bad_form": Message(
            en="The form expired or did not come from this site; reload the page and try again.",
            zh="表单已过期或并非来自本站；请刷新页面后重试。",
        ),
        "exercises": Message(en="Exercises", zh="练习"),
        # deadlines and late work
        "due": Message(en="Due", zh="截止"),
        "opens": Message(en="Opens", zh="开放"),
        "no_due": Message(en="no due date", zh="无截止时间"),
        "late_policy": Message(en="Late policy", zh="迟交规则"),
        "late_none": Message(en="late work accepted, no penalty", zh="接受迟交，不扣分"),
        "late_per_day": Message(
            en="{percent}% off per started day late, keeps at least {floor}%",
            zh="每迟交一天（不足一天按一天）扣 {percent}%，至少保留 {floor}%",
        ),
        "late_per_hour": Message(
            en="{percent}% off per started hour late, keeps at least {floor}%",
            zh="每迟交一小时（不足一小时按一小时）扣 {percent}%，至少保留 {floor}%",
        ),
        "late_closed": Message(en="closed after the due date", zh="截止后关闭提交"),
        "submitted_at": Message(en="Submitted", zh="提交时间"),
        "on_time": Message(en="on time", zh="按时"),
        "late_by": Message(en="late by {duration}, penalty {penalty}%", zh="迟交 {duration}，扣分 {penalty}%"),
        "late": Message(en="late", zh="迟交"),
        "times_in": Message(en="Times in {zone}", zh="时间均为 {zone} 时区"),
        "schedule": Message(en="Deadlines", zh="截止时间"),
        "schedule_of": Message(en="Deadlines of {course}", zh="{course} 的截止时间"),
        "save": Message(en="Save", zh="保存"),
        "timezone": Message(en="Time zone", zh="时区"),
        "extensions": Message(en="Extensions", zh="延期"),
        "add_extension": Message(en="Grant an extension", zh="批准延期"),
        "learner_subject": Message(en="Learner (subject)", zh="学习者（subject）"),
        "issuer": Message(en="Issuer", zh="发行方"),
        "penalty_percent": Message(en="Percent per day or hour", zh="每天或每小时扣分百分比"),
        "floor_percent": Message(en="Keeps at least (percent)", zh="至少保留（百分比）"),
        "on_time_only": Message(en="on time", zh="按时"),
        "late_only": Message(en="late", zh="迟交"),
        "dur_d": Message(en="{n} d", zh="{n} 天"),
        "dur_h": Message(en="{n} h", zh="{n} 小时"),
        "dur_min": Message(en="{n} min", zh="{n} 分钟"),
        "dur_s": Message(en="{n} s", zh="{n} 秒"),
        "local_time_help": Message(
            en="Times in the course's zone ({zone}); leave a field empty for none.",
            zh="时间按课程时区（{zone}）填写；留空表示不设置。",
        ),
        "bad_local_time": Message(
            en="{value!r} is not a date and time; use the date picker or YYYY-MM-DDTHH:MM",
            zh="{value!r} 不是有效的日期时间；请使用日期选择器或 YYYY-MM-DDTHH:MM 格式",
        ),
        "extension_until": Message(en="extended to {due}", zh="已延期至 {due}"),
        "exercise": Message(en="Exercise", zh="练习"),
        "best": Message(en="Best score", zh="最高分"),
        "latest": Message(en="Latest", zh="最近一次"),
        "attempts": Message(en="Attempts", zh="提交次数"),
        "attempts_left": Message(en="Attempts left", zh="剩余次数"),
        "unlimited": Message(en="unlimited", zh="不限"),
        "template": Message(en="Template", zh="模板"),
        "download": Message(en="Download", zh="下载"),
        "upload": Message(en="Upload", zh="上传"),
        "submit": Message(en="Submit notebook", zh="提交笔记本"),
        "your_submissions": Message(en="Your recent submissions", zh="你最近的提交"),
        "submission": Message(en="Submission", zh="提交"),
        "status": Message(en="Status", zh="状态"),
        "score": Message(en="Score", zh="得分"),
        "check": Message(en="Check", zh="检查项"),
        "points": Message(en="Points", zh="分数"),
        "feedback": Message(en="Feedback", zh="反馈"),
        "passed": Message(en="passed", zh="通过"),
        "failed": Message(en="failed", zh="未通过"),
        "queued": Message(en="queued", zh="排队中"),
        "running": Message(en="running", zh="运行中"),
        "graded": Message(en="graded", zh="已评分"),
        "error": Message(en="error", zh="出错"),
        "not_gradable": Message(en="not gradable (not counted)", zh="无法评分（不计入）"),
        "superseded": Message(en="superseded", zh="已被取代"),
        "cell_of": Message(en="running cell {i} of {n}", zh="正在运行第 {i} / {n} 个单元"),
        "checking": Message(en="running the checks", zh="正在检查"),
        "started": Message(en="started", zh="已开始"),
        "live": Message(en="Progress", zh="进度"),
        "message": Message(en="Message", zh="说明"),
        "overridden": Message(en="set by an instructor", zh="由教师调整"),
        "feedback_lang": Message(
            en="Feedback was written in {language} when this attempt was graded.",
            zh="反馈以 {language} 生成（评分时的语言）。",
        ),
        "plot": Message(en="Your training run against the reference band", zh="你的训练曲线与参考范围"),
        "band": Message(en="reference band", zh="参考范围"),
        "your_run": Message(en="your run", zh="你的运行"),
        "outside": Message(en="outside the band at step(s) {steps}", zh="第 {steps} 步超出参考范围"),
        "no_trace": Message(en="No metric trace was stored for this run.", zh="本次运行没有保存指标记录。"),
        "teach": Message(en="Teaching", zh="教学"),
        "gradebook": Message(en="Gradebook", zh="成绩册"),
        "csv": Message(en="CSV", zh="CSV"),
        "policy": Message(en="Policy", zh="计分方式"),
        "learner": Message(en="Learner", zh="学员"),
        "graded_at": Message(en="Graded at", zh="评分时间"),
        "missing": Message(en="missing", zh="未提交"),
        "total": Message(en="Total", zh="总分"),
        "percent": Message(en="%", zh="得分率"),
        "search_learner": Message(en="Learner name", zh="学员姓名"),
        "all": Message(en="all", zh="全部"),
        "filter": Message(en="Filter", zh="筛选"),
        "clear": Message(en="Clear", zh="清除"),
        "pages": Message(en="Pages", zh="分页"),
        "prev": Message(en="Previous", zh="上一页"),
        "next": Message(en="Next", zh="下一页"),
        "page_of": Message(
            en="Learners {first}-{last} of {n} (of {total} in the course), page {page} of {pages}",
            zh="第 {first}-{last} 名学员，共 {n} 名（课程共 {total} 名），第 {page}/{pages} 页",
        ),
        "stats": Message(en="Statistics", zh="统计"),
        "histogram": Message(en="Score histogram", zh="分数分布"),
        "pass_rates": Message(en="Pass rate per check", zh="各检查项通过率"),
        "submissions": Message(en="Submissions", zh="提交数"),
        "learners": Message(en="Learners", zh="学员数"),
        "median_time": Message(en="Median grading time", zh="评分耗时中位数"),
        "override": Message(en="Override", zh="调整分数"),
        "reason": Message(en="Reason", zh="原因"),
        "new_score": Message(en="New score", zh="新分数"),
        "overrides": Message(en="Overrides", zh="分数调整记录"),
        "regrade": Message(en="Regrade", zh="重新评分"),
        "regrade_all": Message(en="Regrade every submission of this exercise", zh="重新评分该练习的所有提交"),
        "queue": Message(en="Queue health", zh="队列状态"),
        "lane": Message(en="Lane", zh="队列"),
        "depth": Message(en="Waiting", zh="等待数"),
        "workers": Message(en="Workers", zh="评分节点"),
        "devices": Message(en="Devices", zh="加速卡"),
        "host": Message(en="Host", zh="主机"),
        "slots": Message(en="Slots", zh="并发数"),
        "last_seen": Message(en="Last seen", zh="最近心跳"),
        "recent_not_gradable": Message(en="Recent not-gradable submissions", zh="最近无法评分的提交"),
        # queue health (service/web/templates/queue.html) and the learner's live status (submission.js)
        "qh_window": Message(en="Last {hours} h", zh="最近 {hours} 小时"),
        "qh_oldest": Message(en="Oldest waiting", zh="最久等待"),
        "qh_jobs": Message(en="Jobs by status", zh="各状态的任务数"),
        "qh_causes": Message(en="Failures and retries by cause", zh="按原因统计的失败与重试"),
        "qh_causes_help": Message(
            en="Jobs filed, claimed or finished in the window whose last run was faulted, by what became of them.",
            zh="窗口内创建、领取或结束且最近一次运行出错的任务，按其结果统计。",
        ),
        "qh_cause": Message(en="Cause", zh="原因"),
        "qh_total": Message(en="Jobs", zh="任务数"),
        "qh_failed": Message(en="Gave up (not gradable)", zh="已放弃（无法评分）"),
        "qh_recovered": Message(en="Recovered", zh="重试后成功"),
        "qh_retrying": Message(en="Retrying", zh="重试中"),
        "qh_example": Message(en="Latest text", zh="最近的错误信息"),
        "qh_sampled": Message(
            en="Only the newest {n} faulted jobs were counted.", zh="只统计了最新的 {n} 个出错任务。"
        ),
        "qh_no_faults": Message(en="No failures or retries in the window.", zh="窗口内没有失败或重试。"),
        "qh_live": Message(en="Live workers", zh="在线评分节点"),
        "qh_dead": Message(en="Dead workers (no heartbeat for {s} s)", zh="失联评分节点（{s} 秒无心跳）"),
        "qh_held": Message(en="Running jobs", zh="运行中的任务"),
        "qh_reaped": Message(en="Jobs taken back", zh="被收回的任务"),
        "qh_ago": Message(en="{s} s ago", zh="{s} 秒前"),
        "qh_status_now": Message(en="Now", zh="当前状态"),
        "qh_failed_at": Message(en="Given up at", zh="放弃时间"),
        "job_queued": Message(en="queued", zh="排队中"),
        "job_running": Message(en="running", zh="运行中"),
        "job_done": Message(en="done", zh="已完成"),
        "job_failed": Message(en="failed", zh="失败"),
        "job_cancelled": Message(en="cancelled", zh="已取消"),
        "cause_sandbox_users_exhausted": Message(en="no free sandbox user", zh="没有空闲的沙箱用户"),
        "cause_host_busy": Message(
            en="host busy (devices, control groups or CPU)", zh="主机繁忙（加速卡、控制组或 CPU）"
        ),
        "cause_db_unavailable": Message(en="database unreachable", zh="数据库无法连接"),
        "cause_worker_lost": Message(en="worker lost or stopped", zh="评分节点失联或停止"),
        "cause_kernel_crash": Message(en="kernel crashed or would not start", zh="内核崩溃或无法启动"),
        "cause_other": Message(en="other", zh="其他"),
        "live_position": Message(en="number {p} in the queue", zh="队列中第 {p} 位"),
        "live_eta": Message(en="expected to finish in about {t}", zh="预计约 {t}后完成"),
        "live_no_worker": Message(
            en="no grader is running right now; it starts as soon as one is",
            zh="目前没有评分节点在运行；有节点时即开始",
        ),
        "live_no_eta": Message(en="no time estimate yet", zh="暂无时间估计"),
        "live_s": Message(en="{n} s", zh="{n} 秒"),
        "live_min": Message(en="{n} min", zh="{n} 分钟"),
        "live_requeued": Message(
            en="Your attempt was put back in the queue because the grader {why}; it does not count against you.",
            zh="由于评分系统{why}，你的提交已重新排队；这不计入你的提交次数。",
        ),
        "why_sandbox_users_exhausted": Message(en="had no free sandbox", zh="没有空闲的沙箱"),
        "why_host_busy": Message(en="was busy", zh="繁忙"),
        "why_db_unavailable": Message(en="could not reach its database", zh="无法连接数据库"),
        "why_worker_lost": Message(en="stopped while running it", zh="在运行时停止"),
        "why_kernel_crash": Message(en="could not start a kernel", zh="无法启动内核"),
        "why_other": Message(en="had a problem", zh="出现问题"),
        "none": Message(en="none", zh="无"),
        "course": Message(en="Course", zh="课程"),
        "back": Message(en="Back", zh="返回"),
        "done_regrade": Message(en="{n} run(s) queued.", zh="已排队 {n} 次评分。"),
        # statistics an instructor acts on (service/web/stats_pages.py)
        "best_basis": Message(
            en="Each learner counts once, with their best attempt (the gradebook's best policy).",
            zh="每位学员只计一次，取其最高分的一次提交（与成绩册的“最高分”方式相同）。",
        ),
        "courses_counted": Message(en="Courses counted: {courses}", zh="统计的课程：{courses}"),
        "hist_name": Message(
            en="Histogram of each learner's best score in {exercise}: {n} learners in 10 % buckets of the maximum",
            zh="{exercise} 每位学员最高分的分布：{n} 名学员，按满分的 10% 分段",
        ),
        "bucket": Message(en="Score (% of the maximum)", zh="分数（占满分的百分比）"),
        "chart_data": Message(en="The chart's numbers as a table", zh="图表数据（表格）"),
        "submitted_n": Message(en="Submitted", zh="已提交"),
        "not_submitted": Message(en="Not submitted", zh="未提交"),
        "mean_best": Message(en="Mean best score", zh="最高分平均值"),
        "median_best": Message(en="Median best score", zh="最高分中位数"),
        "rate_basis": Message(
            en="Over each learner's best scored attempt; the number failed links to those attempts.",
            zh="按每位学员已评分的最高分提交统计；点击未通过人数可查看这些提交。",
        ),
        "passed_n": Message(en="Passed", zh="通过"),
        "failed_n": Message(en="Failed", zh="未通过"),
        "rate": Message(en="Pass rate", zh="通过率"),
        "attempts_by_status": Message(en="Every attempt by status", zh="全部提交按状态"),
        "time_to_grade": Message(en="Time to grade", zh="评分用时"),
        "timing_basis": Message(
            en="Grading runs finished in the last {days} days (since {since}), from the jobs' own timestamps "
            "(nearest-rank percentiles).",
            zh="最近 {days} 天（自 {since} 起）完成的评分，按任务自身的时间戳计算（最近秩百分位数）。",
        ),
        "queue_wait": Message(en="Waiting in the queue", zh="排队等待"),
        "grading_time": Message(en="Grading", zh="评分"),
        "runs": Message(en="Runs", zh="次数"),
        "no_data": Message(en="no data", zh="无数据"),
        "seconds": Message(en="{s} s", zh="{s} 秒"),
        "failures_title": Message(en="Best attempts that failed {check}", zh="未通过 {check} 的最高分提交"),
        "failures_basis": Message(
            en="Each learner's best attempt (the ones the pass rate counts) that failed this check, lowest score "
            "first.",
            zh="每位学员的最高分提交中未通过此检查项的（即通过率所统计的提交），按分数从低到高排列。",
        ),
        "no_failures": Message(en="No best attempt failed this check.", zh="没有最高分提交未通过此检查项。"),
        "open_attempt": Message(en="Open {user}'s attempt", zh="查看 {user} 的提交"),
        "course_stats": Message(en="Course statistics", zh="课程统计"),
        "side_by_side": Message(en="Exercises side by side", zh="各练习对比"),
        "median_best_pct": Message(en="Median best %", zh="最高分中位数（%）"),
        "pass_rate_at": Message(en="Pass rate (best at least {t} %)", zh="通过率（最高分不低于 {t}%）"),
        "at_risk": Message(en="Learners at risk", zh="需要关注的学员"),
        "at_risk_basis": Message(
            en="Nothing submitted, or a best total below {t} % of the course's points; work due within {days} "
            "days comes first.",
            zh="尚未提交任何作业，或最高分总分低于课程总分的 {t}%；{days} 天内截止的作业排在前面。",
        ),
        "threshold": Message(en="Threshold (%)", zh="阈值（%）"),
        "show": Message(en="Show", zh="显示"),
        "reason_nothing_submitted": Message(en="nothing submitted", zh="尚未提交任何作业"),
        "reason_below_threshold": Message(en="below the threshold", zh="低于阈值"),
        "risk_work": Message(en="Work to follow up", zh="需跟进的练习"),
        "due_soon": Message(en="due soon", zh="即将截止"),
        "no_at_risk": Message(en="No learner is at risk.", zh="没有需要关注的学员。"),
        "regrade_confirm_title": Message(
            en="Regrade every submission of {exercise}?", zh="重新评分 {exercise} 的所有提交？"
        ),
        "regrade_will": Message(
            en="{n} run(s) will be queued behind interactive work.", zh="将在交互提交之后排队 {n} 次评分。"
        ),
        "regrade_will_skip": Message(en="{n} submission(s) will be skipped:", zh="将跳过 {n} 份提交："),
        "regrade_confirm": Message(en="Queue {n} run(s)", zh="排队 {n} 次评分"),
        "regrade_nothing": Message(
            en="Nothing can be queued now, so there is nothing to confirm.", zh="目前没有可以排队的提交，无需确认。"
        ),
        "cancel": Message(en="Cancel", zh="取消"),
        "regrade_done": Message(
            en="{n} run(s) queued; {skipped} skipped.", zh="已排队 {n} 次评分；跳过 {skipped} 份。"
        ),
        "regrade_skipped_why": Message(en="Skipped, by reason:", zh="跳过的提交（按原因）："),
        "skip_already_pending": Message(
            en="a run is still queued or being graded (it is graded once; regrade after it ends)",
            zh="仍有一次评分在排队或进行中（只会评分一次；结束后再重新评分）",
        ),
        "skip_exercise_removed": Message(
            en="the exercise is no longer in the catalogue (restore it to regrade)",
            zh="该练习已不在目录中（恢复后才能重新评分）",
        ),
        "plot_name": Message(
            en="{label} ({metric}) against the reference band: {n} steps, {out} outside the band",
            zh="{label}（{metric}）与参考范围对比：共 {n} 步，{out} 步超出范围",
        ),
        "in_band": Message(en="inside the band", zh="在参考范围内"),
        "out_of_band": Message(en="outside the band", zh="超出参考范围"),
        "in_band_q": Message(en="Inside the band?", zh="是否在范围内"),
        "step": Message(en="Step", zh="步"),
        "value": Message(en="Value", zh="数值"),
        "saved": Message(en="Saved.", zh="已保存。"),
        # an instructor's score, and grader faults, as the learner reads them (service/grades/faults.py)
        "override_set": Message(en="set by {who} at {at}", zh="由 {who} 于 {at} 设定"),
        "override_why": Message(en="Instructor's reason", zh="教师的说明"),
        "fault_not_gradable": Message(
            en="The grader had a problem on its side, so this attempt was not scored. It is not your fault and it "
            "is not counted as a zero. Submit the same notebook again later; if it happens again, ask an "
            "instructor for a regrade below.",
            zh="评分器自身出现问题，因此本次提交没有评分。这不是你的问题，也不会记为零分。"
            "请稍后重新提交同一笔记本；如果再次出现，请在下方请教师重新评分。",
        ),
        "fault_regrade_failed": Message(
            en="A regrade of this attempt could not run because of a problem on the grader's side; the previous "
            "grade stands. There is nothing you need to do; an instructor can try the regrade again.",
            zh="由于评分器自身的问题，本次重新评分未能运行；之前的成绩保持不变。你无需做任何事；教师可以再次重新评分。",
        ),
        "fault_unstorable": Message(
            en="The result could not be stored, so the checks' feedback is left out. Change what your code prints "
            "or returns (very long or unusual text), then submit again, or ask an instructor below.",
            zh="评分结果无法保存，因此省略了各检查项的反馈。请修改代码输出或返回的内容（过长或不寻常的文本）后重新提交，"
            "或在下方联系教师。",
        ),
        "fault_requeued": Message(
            en="The grader had a problem on its side; this attempt will be graded again automatically.",
            zh="评分器自身出现问题；本次提交将自动重新评分。",
        ),
        # regrade requests and problem reports (service/requests/, service/web/requests_pages.py)
        "requests": Message(en="Requests", zh="请求"),
        "requests_title": Message(en="Regrade requests and problem reports", zh="重评申请与问题反馈"),
        "requests_in": Message(en="Requests in {course}", zh="{course} 的请求"),
        "request_help": Message(
            en="Ask an instructor to look at this grade again, or report a problem with the grading. "
            "An instructor answers here.",
            zh="你可以请教师重新查看本次成绩，或反馈评分中的问题。教师会在这里答复。",
        ),
        "request_kind": Message(en="Kind", zh="类型"),
        "regrade_request": Message(en="regrade request", zh="重评申请"),
        "problem_report": Message(en="problem report", zh="问题反馈"),
        "request_text": Message(en="Your message", zh="你的留言"),
        "request_send": Message(en="Send", zh="发送"),
        "request_waiting": Message(
            en="Your request is open; an instructor will answer it here.",
            zh="你的请求正在等待教师答复，答复会显示在这里。",
        ),
        "open": Message(en="open", zh="待处理"),
        "answered": Message(en="answered", zh="已答复"),
        "closed": Message(en="closed", zh="已关闭"),
        "asked_by": Message(en="{who} at {at}", zh="{who} 于 {at}"),
        "answered_by": Message(en="answered by {who} at {at}", zh="{who} 于 {at} 答复"),
        "closed_by": Message(en="closed by {who} at {at}", zh="{who} 于 {at} 关闭"),
        "answer": Message(en="Answer", zh="答复"),
        "answer_send": Message(en="Send the answer", zh="发送答复"),
        "answer_close": Message(en="and close the request", zh="并关闭该请求"),
        "close_request": Message(en="Close without answering", zh="不答复直接关闭"),
        "no_requests": Message(en="No requests.", zh="暂无请求。"),
        "open_count": Message(en="{n} open", zh="{n} 个待处理"),
        "asked_at": Message(en="Asked at", zh="提交时间"),
        "nb_title": Message(en="The submitted notebook", zh="提交的笔记本"),
        "nb_download": Message(en="Download the submitted .ipynb", zh="下载提交的 .ipynb 文件"),
        "nb_compare_with": Message(en="Compare with attempt", zh="与另一次提交比较"),
        "nb_compare": Message(en="Compare", zh="比较"),
        "nb_compare_title": Message(en="Two attempts, cell by cell", zh="两次提交逐个单元比较"),
        "nb_compare_note": Message(
            en="Cell sources are compared line by line (Python's difflib); outputs are not compared.",
            zh="逐行比较单元的源代码（Python difflib）；不比较输出。",
        ),
        "nb_summary": Message(
            en="{changed} changed, {added} added, {removed} removed, {same} unchanged",
            zh="修改 {changed} 个，新增 {added} 个，删除 {removed} 个，未变 {same} 个",
        ),
        "nb_same": Message(en="unchanged", zh="未变"),
        "nb_changed": Message(en="changed", zh="已修改"),
        "nb_added": Message(en="added", zh="新增"),
        "nb_removed": Message(en="removed", zh="已删除"),
        "nb_cell": Message(en="cell {n}", zh="第 {n} 个单元"),
        "nb_not_run": Message(en="not run by the grader", zh="评分时未运行"),
        "nb_grader_says": Message(en="Grader", zh="评分器"),
        "nb_outputs_note": Message(
            en="The grader cleared the outputs and ran every code cell again; beside each cell is what that run "
            "reported and printed (as text only). The outputs saved in the upload (the learner's own run) are "
            "folded apart, as text only.",
            zh="评分器清除了输出并重新运行了每个代码单元；每个单元旁是该次运行的结果和输出（仅以纯文本显示）。"
            "上传文件中保存的输出（学员自己运行的结果）另行折叠显示，仅以纯文本显示。",
        ),
        "nb_graded_outputs": Message(en="Output when graded", zh="评分时的输出"),
        "nb_graded_none": Message(en="No output.", zh="无输出。"),
        "nb_graded_not_recorded": Message(en="Not recorded for this attempt.", zh="此次提交未记录评分时的输出。"),
        "nb_graded_omitted": Message(
            en="Output not kept ({kinds}): only text is recorded from the grading run.",
            zh="未保留的输出（{kinds}）：评分运行只记录文本。",
        ),
        "nb_graded_cut": Message(
            en="The grader kept only part of this cell's output.", zh="评分器只保留了此单元的部分输出。"
        ),
        "nb_saved_outputs": Message(en="Outputs saved in the upload", zh="上传文件中保存的输出"),
        "nb_omitted": Message(
            en="Output not shown ({kinds}): only text and small PNG images are shown here.",
            zh="未显示的输出（{kinds}）：此处只显示文本和较小的 PNG 图片。",
        ),
        "nb_image": Message(en="image saved in cell {n}", zh="第 {n} 个单元保存的图片"),
        "nb_cut": Message(en="Cut here: download the notebook for the rest.", zh="此处已截断：完整内容请下载笔记本。"),
        "nb_more_cells": Message(
            en="{n} more cell(s) not shown: download the notebook.", zh="还有 {n} 个单元未显示：请下载笔记本。"
        ),
        "nb_unreadable": Message(
            en="This upload cannot be shown as a notebook; download it to see the file.",
            zh="此上传无法显示为笔记本；请下载文件查看。",
        ),
        # every page: the skip link, the navigation's name, labels naming their exercise (issue 27 section 7)
        "skip_to_content": Message(en="Skip to content", zh="跳到正文"),
        "nav_main": Message(en="Main", zh="主导航"),
        "nav_lang": Message(en="Language", zh="语言"),
        "signed_in_as": Message(en="Signed in as", zh="当前用户"),
        "notebook_for": Message(en="Notebook for {exercise}", zh="{exercise} 的笔记本"),
        "course_for": Message(en="Course for {exercise}", zh="{exercise} 的课程"),
        "go_exercises": Message(en="Go to the exercises", zh="前往练习列表"),
        "upload_too_large": Message(
            en="That file is larger than the upload limit; clear the notebook's outputs "
            "(Kernel > Restart & Clear Output), save it and submit again.",
            zh="文件超过上传大小上限；请清除笔记本的输出（Kernel > Restart & Clear Output），保存后重新提交。",
        ),
        "verdict": Message(en="Verdict", zh="结果"),
        # error pages for a browser (service/web/routes.py): a heading per kind and what to do
        "err_title_not_found": Message(en="Not found", zh="未找到"),
        "err_title_forbidden": Message(en="Not allowed", zh="无权访问"),
        "err_title_invalid": Message(en="This request cannot be used", zh="无法处理此请求"),
        "err_title_busy": Message(en="Too many requests", zh="请求过多"),
        "err_title_server": Message(en="Something went wrong on our side", zh="服务端出错"),
        "err_title_other": Message(en="That did not work", zh="操作未完成"),
        "page_not_found": Message(
            en="There is no page at this address; check the link, or start again from the exercises.",
            zh="此地址没有页面；请检查链接，或从练习列表重新开始。",
        ),
        "page_wrong_method": Message(
            en="This address cannot be used that way (it takes {allowed}); start again from the exercises.",
            zh="此地址不支持这种请求方式（支持 {allowed}）；请从练习列表重新开始。",
        ),
        "page_invalid": Message(
            en="This address has a value the page cannot use: {problems}.",
            zh="此地址中有页面无法使用的值：{problems}。",
        ),
        "page_server_error": Message(
            en="The page could not be made ({error}); it has been logged. Try again in a moment.",
            zh="页面生成失败（{error}），已记录。请稍后重试。",
        ),
        # the LTI content picker and its pages inside the LMS (service/lti/picker.py)
        "lti_picker_title": Message(en="Add titangrade exercises", zh="添加 titangrade 练习"),
        "lti_bind_title": Message(en="Choose the exercise of this link", zh="为此链接选择练习"),
        "lti_picker_course": Message(en="Course: {course}", zh="课程：{course}"),
        "lti_picker_one": Message(en="Choose one exercise.", zh="请选择一个练习。"),
        "lti_picker_many": Message(en="Choose one or more exercises.", zh="请选择一个或多个练习。"),
        "lti_bind_help": Message(
            en="This LMS link does not say which exercise it is, so no grade could go back to the LMS. Choose "
            "its exercise once: learners who open the link then get that exercise, and their grades are sent back.",
            zh="此 LMS 链接没有指明对应的练习，因此成绩无法传回 LMS。请为它选择一次练习：之后打开此链接的学员"
            "会进入该练习，成绩也会传回 LMS。",
        ),
        "lti_chapter": Message(en="Chapter {n}", zh="第 {n} 章"),
        "lti_points": Message(en="Points", zh="分值"),
        "lti_points_for": Message(en="Points for {title}", zh="{title} 的分值"),
        "lti_language": Message(en="Language", zh="语言"),
        "lti_language_for": Message(en="Language of {title}", zh="{title} 的语言"),
        "lti_open_in": Message(en="Open the link in", zh="链接打开方式"),
        "lti_target_window": Message(en="a new window", zh="新窗口"),
        "lti_target_iframe": Message(en="the LMS page (a frame)", zh="LMS 页面内（框架）"),
        "lti_add": Message(en="Add to the course", zh="添加到课程"),
        "lti_bind": Message(en="Use this exercise", zh="使用此练习"),
        "lti_no_lineitem": Message(
            en="The LMS will not make gradebook columns from this choice; set up grading in the LMS.",
            zh="LMS 不会根据此选择创建成绩列；请在 LMS 中设置评分。",
        ),
        "lti_new_window_hint": Message(
            en="If titangrade stays blank inside the LMS, set the link to open in a new window.",
            zh="如果 titangrade 在 LMS 页面内显示空白，请把链接设置为在新窗口中打开。",
        ),
    },
)

ERRORS = Catalogue(
    "errors",
    {
        # who may do what
        "send_bearer": Message(en="send `Authorization: Bearer <token>`", zh="请发送 `Authorization: Bearer <令牌>`"),
        "token_rejected": Message(
            en="the bearer token is unknown, revoked or expired; ask your instructor or an administrator "
            "for a new one (admins: POST /api/v1/tokens)",
            zh="令牌无效、已被吊销或已过期；请向教师或管理员申请新的令牌",
        ),
        "token_not_found": Message(
            en="token {token} does not exist or is not yours; list yours with GET /api/v1/tokens",
            zh="令牌 {token} 不存在或不属于你；可用 GET /api/v1/tokens 查看",
        ),
        "staff_only": Message(
            en="this endpoint is for instructors and admins; learners can only read their own submissions",
            zh="该接口仅供教师和管理员使用；学员只能查看自己的提交",
        ),
        "admin_only": Message(en="this endpoint is for administrators (global role admin)", zh="该接口仅供管理员使用"),
        "staff_pages": Message(en="these pages are for instructors", zh="这些页面仅供教师使用"),
        "not_instructor": Message(
            en="you are not an instructor of course {course!r}", zh="你不是课程 {course!r} 的教师"
        ),
        "unknown_check": Message(
            en="exercise {exercise} has no check {check!r}; its checks are: {checks}",
            zh="练习 {exercise} 没有检查项 {check!r}；它的检查项有：{checks}",
        ),
        "instructors_only": Message(
            en="only instructors of course {course} can do this", zh="只有课程 {course} 的教师可以执行此操作"
        ),
        "not_enrolled": Message(
            en="you are not enrolled in course {course!r}; your courses: {courses}",
            zh="你没有加入课程 {course!r}；你的课程：{courses}",
        ),
        # what was sent
        "course_required": Message(
            en="say which course this submission is for: send the form field `course` (one of {courses})",
            zh="请用表单字段 `course` 指明提交所属的课程（可选：{courses}）",
        ),
        "notebook_missing": Message(
            en="the multipart field `notebook` (the .ipynb file) is missing; send it with -F notebook=@file.ipynb",
            zh="缺少 multipart 字段 `notebook`（.ipynb 文件）；请用 -F notebook=@file.ipynb 发送",
        ),
        "choose_file": Message(en="choose a .ipynb file to upload", zh="请选择要上传的 .ipynb 文件"),
        "nesting_too_deep": Message(
            en="the JSON nests too deeply to read; send the notebook as Jupyter saved it",
            zh="JSON 嵌套层数过深；请提交从 Jupyter 保存的笔记本",
        ),
        "submission_not_found": Message(
            en="submission {submission} does not exist or is not yours; list yours with GET /api/v1/submissions",
            zh="提交 {submission} 不存在或不属于你；可用 GET /api/v1/submissions 查看自己的提交",
        ),
        "idempotency_key_reused": Message(
            en="Idempotency-Key {key!r} was already used for a different request (submission {submission_id}); "
            "send a new key for a new submission, or repeat the original request exactly",
            zh="Idempotency-Key {key!r} 已用于另一个不同的请求（提交 {submission_id}）；新的提交请使用新的键",
        ),
        "override_reason": Message(en="give a reason (at least 3 characters)", zh="请填写原因（至少 3 个字符）"),
        "override_not_number": Message(
            en="the score must be a number, not {score!r}", zh="分数必须是数字，而不是 {score!r}"
        ),
        "override_negative": Message(en="the score cannot be negative", zh="分数不能为负"),
        "request_text": Message(
            en="write what you would like an instructor to look at: 1 to {limit} characters",
            zh="请写下希望教师查看的内容：1 到 {limit} 个字符",
        ),
        "request_kind": Message(
            en="the kind of request must be `regrade` or `problem`", zh="请求类型必须是 `regrade` 或 `problem`"
        ),
        "request_own_only": Message(
            en="only the learner who made submission {submission} can ask about it; instructors answer requests "
            "(POST /api/v1/requests/<id>/answer)",
            zh="只有提交 {submission} 的学员本人可以就其提出请求；教师请答复请求",
        ),
        "request_open_exists": Message(
            en="submission {submission} already has an open request (#{request}); wait for its answer, then "
            "ask again if you need to",
            zh="提交 {submission} 已有一个待处理的请求（#{request}）；请等待答复后再提出新的请求",
        ),
        "request_rate": Message(
            en="you have sent {limit} requests in the last 24 hours, the most one learner may; wait {wait_s} s "
            "(see Retry-After) and ask again, or talk to your instructor",
            zh="你在 24 小时内已发送 {limit} 个请求，已达上限；请等待 {wait_s} 秒后再试，或直接联系教师",
        ),
        "request_not_found": Message(
            en="request {request} does not exist or is not yours; a submission's requests are listed at "
            "GET /api/v1/submissions/<id>/requests",
            zh="请求 {request} 不存在或不属于你；提交的请求可用 GET /api/v1/submissions/<id>/requests 查看",
        ),
        "request_not_open": Message(
            en="request {request} is {status}: only an open request can be answered; the learner can open a new one",
            zh="请求 {request} 的状态为 {status}：只能答复待处理的请求；学员可以提出新的请求",
        ),
        "request_already_closed": Message(en="request {request} is already closed", zh="请求 {request} 已关闭"),
        "answer_text": Message(en="write an answer: 1 to {limit} characters", zh="请填写答复：1 到 {limit} 个字符"),
        # limits
        "rate_limited": Message(
            en="more than {per_minute} submissions of {exercise} in the last minute; "
            "wait {wait_s} s (see Retry-After) and submit again",
            zh="一分钟内 {exercise} 的提交超过 {per_minute} 次；请等待 {wait_s} 秒后再提交",
        ),
        "attempt_limit": Message(
            en="you have used all {limit} attempts for {exercise}; ask an instructor if you need more",
            zh="{exercise} 的 {limit} 次提交机会已用完；如需更多请联系教师",
        ),
        # deadlines (service/courses/schedules.py)
        "exercise_not_open": Message(
            en="{exercise} opens at {opens_at} ({zone}); submit after that time",
            zh="{exercise} 将于 {opens_at}（{zone}）开放；请在此之后提交",
        ),
        "exercise_closed": Message(
            en="{exercise} closed at {due_at} ({zone}) and takes no late work; ask an instructor for an extension",
            zh="{exercise} 已于 {due_at}（{zone}）截止，不接受迟交；如需延期请联系教师",
        ),
        "bad_timezone": Message(
            en="unknown time zone {zone!r}; use an IANA name such as UTC, Europe/Berlin or Asia/Shanghai",
            zh="未知时区 {zone!r}；请使用 IANA 名称，如 UTC、Europe/Berlin 或 Asia/Shanghai",
        ),
        "bad_schedule": Message(
            en="opens_at ({opens_at}) must be before due_at ({due_at}); change one of them",
            zh="opens_at（{opens_at}）必须早于 due_at（{due_at}）；请修改其中一个",
        ),
        "bad_late_policy": Message(
            en="late policy {kind}: {problem}",
            zh="迟交规则 {kind}：{problem}",
        ),
        "no_due_date": Message(
            en="a {kind} late policy needs a due_at; set one or use kind none",
            zh="迟交规则 {kind} 需要 due_at；请设置截止时间，或使用 none",
        ),
        "unknown_learner": Message(
            en="no user {subject!r} at issuer {issuer!r}; give the learner's subject (and issuer) as the gradebook "
            "shows",
            zh="发行方 {issuer!r} 下没有用户 {subject!r}；请按成绩册所示填写学习者的 subject（及 issuer）",
        ),
        "streams_full": Message(
            en="you have {per_identity} event streams open already, the most one user may; close "
            "a page or a client that follows a submission, or wait for one to finish, then retry",
            zh="你已打开 {per_identity} 个事件流，已达上限；请关闭一个页面或等待其结束后重试",
        ),
        "devices_unavailable": Message(
            en="exercise {exercise} needs {devices} accelerator(s) but the largest worker "
            "offers {offered}; ask an administrator to start a worker whose "
            "TITANGRADE_WORKER_DEVICES lists at least {devices} (e.g. npu:0-{last_device})",
            zh="练习 {exercise} 需要 {devices} 个加速卡，但目前最大的评分节点只有 {offered} 个；请联系管理员启动"
            " TITANGRADE_WORKER_DEVICES 至少列出 {devices} 个设备的评分节点（例如 npu:0-{last_device}）",
        ),
        "world_size_unavailable": Message(
            en="exercise {exercise} launches {world_size} ranks but workers run at most "
            "{max_world_size}; raise TITANGRADE_WORKER_MAX_WORLD_SIZE on a larger host",
            zh="练习 {exercise} 需要 {world_size} 个进程，超过评分节点的上限（{max_world_size} 个）；"
            "请联系管理员在更大的主机上调高 TITANGRADE_WORKER_MAX_WORLD_SIZE",
        ),
        # requests the API cannot read (service/http_errors.py, service/middleware.py)
        "send_bearer_token": Message(
            en="send `Authorization: Bearer <token>`; your instructor or an administrator gives you a token",
            zh="请发送 `Authorization: Bearer <令牌>`；令牌由教师或管理员发放",
        ),
        "body_too_large": Message(
            en="the request body is larger than the {limit}-byte limit; for a notebook, clear its outputs "
            "(Kernel > Restart & Clear Output) and submit again",
            zh="请求体超过 {limit} 字节的上限；笔记本请先清除输出（Kernel > Restart & Clear Output）再提交",
        ),
        "request_invalid": Message(
            en="the request is invalid: {problems}; the API is described at {docs}",
            zh="请求无效：{problems}；接口说明见 {docs}",
        ),
        "field_required": Message(en="is required", zh="为必填项"),
        "field_not_a_file": Message(
            en="must be an uploaded file (multipart/form-data: -F notebook=@file.ipynb)",
            zh="必须是上传的文件（multipart/form-data：-F notebook=@file.ipynb）",
        ),
        "field_invalid": Message(en="is not valid", zh="无效"),
        "malformed_multipart": Message(
            en="the request body is not valid multipart/form-data; send the notebook as a file field: "
            "curl -F notebook=@mine.ipynb -F exercise_id=ch07.wordle_reward ...",
            zh="请求体不是有效的 multipart/form-data；请以文件字段发送笔记本：curl -F notebook=@mine.ipynb ...",
        ),
        "malformed_body": Message(
            en="the request body could not be read; send JSON with Content-Type: application/json",
            zh="无法读取请求体；请以 Content-Type: application/json 发送 JSON",
        ),
        "method_not_allowed": Message(
            en="{where}: this path does not take {method}; it takes {allowed}",
            zh="{where}：该路径不支持 {method}，支持 {allowed}",
        ),
        "no_such_endpoint": Message(
            en="{where}: no such endpoint; the API is listed at {docs}", zh="{where}：没有这个接口；接口列表见 {docs}"
        ),
        # our side, for now
        "database_unavailable": Message(
            en="the grading service cannot reach its database right now, so nothing was read or changed; "
            "retry in {wait_s} s (see Retry-After), and tell an administrator if this persists",
            zh="评分服务暂时无法连接数据库，本次请求未读取或修改任何内容；"
            "请在 {wait_s} 秒后重试，如持续出现请联系管理员",
        ),
        "intake_db_failed": Message(
            en="the submission could not be stored ({error} from the database) and nothing was kept; "
            "submit again in {retry_after_s} s, and if this persists tell an administrator",
            zh="数据库出错（{error}），提交未被保存；请在 {retry_after_s} 秒后重新提交，如仍失败请联系管理员",
        ),
        "intake_stopping": Message(
            en="the service is shutting down and takes no new submissions; submit again in {retry_after_s} s",
            zh="服务正在停止，暂不接收提交；请在 {retry_after_s} 秒后重新提交",
        ),
        # LTI picker and resource-link binding (service/lti/picker.py, service/lti/links.py)
        "lti_unbound_link": Message(
            en="this LMS link is not connected to a titangrade exercise yet, so nothing done here could be "
            "graded back to the LMS; ask your instructor to open the link once and choose its exercise",
            zh="此 LMS 链接尚未关联 titangrade 练习，在这里完成的作业无法把成绩传回 LMS；"
            "请让教师打开一次该链接并选择对应的练习",
        ),
        "lti_accept_types": Message(
            en="the LMS asked for {types} content; titangrade adds only LTI resource links (ltiResourceLink), "
            "the kind that sends grades back: add titangrade from the LMS's external-tool or assignment "
            "placement instead",
            zh="LMS 请求的内容类型是 {types}；titangrade 只提供能传回成绩的 LTI 资源链接（ltiResourceLink）："
            "请改从 LMS 的外部工具或作业入口添加 titangrade",
        ),
        "lti_pick_none": Message(en="choose at least one exercise", zh="请至少选择一个练习"),
        "lti_pick_one_only": Message(
            en="the LMS accepts one item here; choose exactly one exercise", zh="LMS 在此只接受一项；请只选择一个练习"
        ),
        "lti_points_invalid": Message(
            en="the points for {exercise} must be a number above 0 and at most {most}, not {value}",
            zh="{exercise} 的分值必须是大于 0、不超过 {most} 的数，而不是 {value}",
        ),
        "lti_lang_invalid": Message(
            en="the language of {exercise} must be en or zh, not {value}",
            zh="{exercise} 的语言必须是 en 或 zh，而不是 {value}",
        ),
        "lti_target_invalid": Message(
            en="the LMS does not accept {target} as where to open the link; choose one of {targets}",
            zh="LMS 不接受 {target} 作为链接的打开方式；请选择 {targets} 之一",
        ),
        "lti_cross_origin": Message(
            en="this form must be sent from titangrade's own picker page, not from {origin}; open the picker "
            "again from the LMS",
            zh="此表单必须从 titangrade 自己的选择页面提交，而不是来自 {origin}；请从 LMS 重新打开选择页面",
        ),
    },
)

CATALOGUES = (WEB, ERRORS)  # the service's namespaces (grading.messages.CATALOGUES has the engine's)


def error(key: str, /, **params: Any) -> Message:
    """Error `key` filled in both languages, for a ServiceError (the response picks the caller's language)."""
    return ERRORS.fill(key, **params)
