"""The message catalogue: every key in both languages with the same placeholders, and a fault is named."""

import pytest

from grading.messages import CATALOGUES, ENGINE, Catalogue, Message


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda c: c.namespace)
def test_every_key_has_en_and_zh_with_the_same_placeholders(catalogue):
    assert catalogue.messages
    assert catalogue.problems() == []


def test_problems_name_a_missing_translation_and_a_placeholder_mismatch():
    planted = Catalogue(
        "planted",
        {
            "fine": Message(en="cell {index}", zh="第 {index} 个"),
            "no_zh": Message(en="cell {index}", zh=""),
            "drifted": Message(en="cell {index} of {total}", zh="第 {index} 个"),
            "format_spec_is_not_a_name": Message(en="{limit_s:g} s", zh="{limit_s} 秒"),
        },
    )
    found = planted.problems()
    assert len(found) == 2
    assert found[0].startswith("planted.no_zh: give both")
    assert found[1].startswith("planted.drifted:") and "['index', 'total']" in found[1]


def test_text_falls_back_to_english_and_fill_renders_both_languages():
    assert ENGINE.text("cell_error", "zh-CN", index=3, error="ValueError") == "第 3 个代码单元抛出 ValueError"
    assert ENGINE.text("cell_error", "fr", index=3, error="ValueError") == "cell 3 raised ValueError"
    filled = ENGINE.fill("hint", hint="look at {x}")  # a value is never read as a template
    assert filled == Message(en="Hint: look at {x}", zh="提示：look at {x}")
    assert Message(en="only English", zh="").text("zh") == "only English"
