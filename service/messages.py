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
        "none": Message(en="none", zh="无"),
        "course": Message(en="Course", zh="课程"),
        "back": Message(en="Back", zh="返回"),
        "done_regrade": Message(en="{n} run(s) queued.", zh="已排队 {n} 次评分。"),
        "saved": Message(en="Saved.", zh="已保存。"),
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
            "reported. The outputs saved in the upload (the learner's own run) are shown as text only.",
            zh="评分器清除了输出并重新运行了每个代码单元；每个单元旁是该次运行的结果。"
            "上传文件中保存的输出（学员自己运行的结果）仅以纯文本显示。",
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
