"""GradeResult.scrub: secrets, their fragments and any run's grader names leave every string of a result."""
from grading.result import CellReport, CheckResult, GradeResult, Status


def result_with(text: str) -> GradeResult:
    return GradeResult(exercise_id="ch05.toy", status=Status.ERROR, score=0, max_score=1, message=text,
                       checks=[CheckResult(name="c", score=0, max_score=1, passed=False, feedback=text)],
                       cells=[CellReport(index=0, status="error", message=text)])


def test_secrets_fragments_and_grader_names_are_replaced_but_public_text_stays():
    nonce = "0123456789abcdef0123456789abcdef"
    text = ("returned 'Zqsecret-input' and 'ecret-in' (cut) and "
            f"{nonce[5:17]}, plus _tg_5f3a9b2c1d0e from an earlier run and 'the apple pie'")
    result = result_with(text)
    result.scrub([nonce, "Zqsecret-input", "apple"], "[hidden]", public="an apple a day")
    for field in (result.message, result.checks[0].feedback, result.cells[0].message):
        assert "Zqsecret" not in field and "ecret-in" not in field and nonce[5:17] not in field
        assert "_tg_5f3a" not in field
        assert "the apple pie" in field  # "apple" is in the public text: not a secret


def test_nothing_to_scrub_leaves_text_alone():
    result = result_with("cell 0 raised ValueError: 0x7f0e44692b40")
    result.scrub([], "[hidden]")
    assert result.message == "cell 0 raised ValueError: 0x7f0e44692b40"
