"""Data preparation as the recipe's ``prepare_data.py`` does it: seed 42, 20 test words, 2000 train draws.

Differences from the recipe, all forced by the offline machines:
- Words come from ``assets/words/wordle_words.txt`` (3,000 common lowercase 5-letter words, see the
  README there), not ``textarena.make("Wordle-v0").word_list``, which needs NLTK network downloads.
  The split mechanics are the recipe's; the words in each split are therefore not the recipe's.
- The shuffle/draw calls use ``random.Random(seed)``; the recipe's exact RNG call sequence is not
  verified, so even with its word list the chosen words could differ.
- Output is JSONL by default; parquet (the recipe's ``data/wordle_{train,test}.parquet``) when asked
  and pyarrow imports.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from exercises.lab.wordle.prompts import SYSTEM_PROMPT, USER_PROMPT

WORDS_PATH = Path(__file__).parent / "assets" / "words" / "wordle_words.txt"
SEED = 42
N_TEST = 20
N_TRAIN = 2000
DATA_SOURCE = "wordle"


def normalise_words(words: Iterable[str]) -> list[str]:
    """5-letter alphabetic words, lowercased, deduplicated, sorted (the recipe's word-list cleaning)."""
    return sorted({w.strip().lower() for w in words if len(w.strip()) == 5 and w.strip().isalpha()})


def load_words(path: str | Path = WORDS_PATH) -> list[str]:
    """The shipped word list (or another one-word-per-line file), cleaned like the recipe's."""
    return normalise_words(Path(path).read_text(encoding="utf-8").splitlines())


def split_words(
    words: Sequence[str], *, seed: int = SEED, n_test: int = N_TEST, n_train: int = N_TRAIN
) -> tuple[list[str], list[str]]:
    """(train, test): shuffle with ``seed``; test = first ``n_test`` words; train = draws with replacement from
    the rest."""
    pool = normalise_words(words)
    if len(pool) <= n_test:
        raise ValueError(
            f"need more than {n_test} distinct 5-letter words to split, got {len(pool)}; pass a longer word list"
        )
    rng = random.Random(seed)
    rng.shuffle(pool)
    test, rest = pool[:n_test], pool[n_test:]
    train = [rng.choice(rest) for _ in range(n_train)]
    return train, test


def make_row(word: str, *, split: str, i: int) -> dict:
    """One dataset row in the recipe's schema."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_PROMPT},
    ]
    return {
        "prompt": messages,
        "raw_prompt": [dict(m) for m in messages],
        "answer": word,
        "index": f"{split}_{i:04d}_{word}",
        "data_source": DATA_SOURCE,
        "reward_model": {"ground_truth": word},
    }


def prepare_data(
    words: Sequence[str] | None = None,
    *,
    seed: int = SEED,
    n_test: int = N_TEST,
    n_train: int = N_TRAIN,
) -> dict[str, list[dict]]:
    """Rows for both splits: {"train": [...2000], "test": [...20]}."""
    train, test = split_words(load_words() if words is None else words, seed=seed, n_test=n_test, n_train=n_train)
    return {
        "train": [make_row(w, split="train", i=i) for i, w in enumerate(train)],
        "test": [make_row(w, split="test", i=i) for i, w in enumerate(test)],
    }


def write_data(rows_by_split: Mapping[str, list[dict]], out_dir: str | Path, *, fmt: str = "jsonl") -> dict[str, Path]:
    """Write ``wordle_{split}.{jsonl|parquet}`` files into ``out_dir``; returns the paths by split."""
    if fmt not in ("jsonl", "parquet"):
        raise ValueError(f"fmt must be 'jsonl' or 'parquet', got {fmt!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, rows in rows_by_split.items():
        path = out / f"wordle_{split}.{fmt}"
        if fmt == "jsonl":
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        else:
            try:
                import pyarrow as pa
                import pyarrow.parquet as pq
            except ImportError as exc:
                raise RuntimeError("parquet output needs pyarrow; pip install pyarrow or use fmt='jsonl'") from exc
            pq.write_table(pa.Table.from_pylist(list(rows)), path)
        paths[split] = path
    return paths


def read_rows(path: str | Path) -> list[dict]:
    """Read rows written by ``write_data`` (either format)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m exercises.lab.data --out data`` writes the two splits."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="data")
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"])
    parser.add_argument("--words", default=str(WORDS_PATH))
    args = parser.parse_args(argv)
    paths = write_data(prepare_data(load_words(args.words)), args.out, fmt=args.format)
    for split, path in paths.items():
        print(f"{split}: {path}")


if __name__ == "__main__":
    main()
