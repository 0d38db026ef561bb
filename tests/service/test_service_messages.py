"""The service's words (pages and errors) in the catalogue format: both languages, same placeholders."""

import pytest

from service.errors import Forbidden, ServiceError
from service.messages import CATALOGUES, error
from service.web.i18n import t


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda c: c.namespace)
def test_every_key_has_en_and_zh_with_the_same_placeholders(catalogue):
    assert catalogue.messages
    assert catalogue.problems() == []


def test_an_error_from_a_key_answers_in_the_callers_language():
    exc = Forbidden(error("not_instructor", course="ml101"))
    assert exc.message == str(exc) == "you are not an instructor of course 'ml101'"
    assert exc.text("zh") == "你不是课程 'ml101' 的教师" and exc.text("en") == exc.message
    assert ServiceError("plain English").text("zh") == "plain English"  # no translation: English


def test_page_words_keep_their_lookup_rules():
    assert t("sign_in", "zh") == "登录" and t("sign_in", "en") == "Sign in"
    assert t("cell_of", "en", i=2, n=5) == "running cell 2 of 5"
    assert t("no_such_word", "zh") == "no_such_word"
