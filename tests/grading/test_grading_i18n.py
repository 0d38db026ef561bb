"""Every engine message exists in English and Chinese with the same placeholders."""
import string

from grading.i18n import MESSAGES, pick, t


def _fields(text):
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_message_has_both_languages_with_same_fields():
    for key, entry in MESSAGES.items():
        assert entry["en"] and entry["zh"], key
        assert _fields(entry["en"]) == _fields(entry["zh"]), key


def test_t_and_pick_choose_language_with_english_fallback():
    assert t("passed", "zh") == "正确" and t("passed", "en") == "correct"
    assert t("passed", "fr") == "correct"
    assert pick({"en": "hello", "zh": ""}, "zh") == "hello"
    assert pick({"en": "hello", "zh": "你好"}, "zh-CN") == "你好"
    assert pick("plain", "zh") == "plain" and pick(None) == ""
