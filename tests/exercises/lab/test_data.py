"""prepare_data: split counts, no overlap, index format and row schema (COURSE.md section 10 item 22)."""

import re

import pytest

from exercises.lab.data import load_words, make_row, prepare_data, read_rows, split_words, write_data
from exercises.lab.wordle.prompts import SYSTEM_PROMPT, USER_PROMPT


def test_shipped_word_list_is_clean():
    words = load_words()
    assert len(words) >= 2000
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in words)
    assert words == sorted(set(words))
    assert {"crane", "apple", "grace", "geese"} <= set(words)


def test_split_counts_and_no_overlap():
    data = prepare_data()
    assert len(data["train"]) == 2000 and len(data["test"]) == 20
    test_words = [r["answer"] for r in data["test"]]
    train_words = [r["answer"] for r in data["train"]]
    assert len(set(test_words)) == 20  # test words are distinct
    assert not set(test_words) & set(train_words)
    assert len(set(train_words)) < 2000  # drawn with replacement from 2,980 words: repeats are certain


def test_split_is_deterministic_for_seed_and_changes_with_it():
    words = load_words()
    assert split_words(words) == split_words(words)
    assert split_words(words, seed=7)[1] != split_words(words)[1]


def test_supplied_word_list_is_cleaned():
    train, test = split_words(["Crane", "crane", "apple", "toolong", "a1bcd", *[f"{c}aaaa" for c in "bcdefghijklmnopqrstuvwxy"]],
                              n_test=20, n_train=50)
    assert "toolong" not in train + test and "a1bcd" not in train + test
    assert len(test) == 20 and len(train) == 50
    with pytest.raises(ValueError, match="distinct 5-letter words"):
        split_words(["crane", "apple"], n_test=20)


def test_row_schema_and_index_format():
    data = prepare_data()
    row = data["train"][7]
    assert set(row) == {"prompt", "raw_prompt", "answer", "index", "data_source", "reward_model"}
    assert row["raw_prompt"] == [{"role": "system", "content": SYSTEM_PROMPT},
                                 {"role": "user", "content": USER_PROMPT}]
    assert row["prompt"] == row["raw_prompt"]
    assert row["data_source"] == "wordle"
    assert row["reward_model"] == {"ground_truth": row["answer"]}
    assert row["index"] == f"train_0007_{row['answer']}"
    for split, rows in data.items():
        for i, r in enumerate(rows):
            assert re.fullmatch(rf"{split}_\d{{4}}_[a-z]{{5}}", r["index"])
            assert r["index"].split("_")[1] == f"{i:04d}"
    assert make_row("crane", split="test", i=3)["index"] == "test_0003_crane"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_write_and_read_round_trip(tmp_path, fmt):
    data = prepare_data(n_train=30)
    paths = write_data(data, tmp_path, fmt=fmt)
    assert paths["train"].name == f"wordle_train.{fmt}"
    assert read_rows(paths["train"]) == data["train"]
    assert read_rows(paths["test"]) == data["test"]
