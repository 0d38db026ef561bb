"""Build the lab's shipped checkpoint: tokenizer + a tiny torchtitan Qwen3 SFT-warmed on synthetic Wordle games.

    .venv/bin/python scripts/make_tiny_checkpoint.py [--out DIR] [--steps N] [--seed S]

The games are played by a candidate-filtering player (each guess is consistent with all feedback
so far) and rendered exactly as the agent loop renders them (ChatML, `<guess>[word]</guess>`
replies, the environment's feedback text); only reply tokens are trained. The model is exported
through `Qwen3StateDictAdapter.to_hf`, so it loads back through `from_hf` as the trainer does.
The SFT is deliberately short: rewards are non-trivial from step 1, yet leave room for GRPO.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exercises.lab import checkpoint, data, grpo, tokenizer as lab_tokenizer  # noqa: E402
from exercises.lab.model import ModelDims, build_titan_model, hf_config_dict  # noqa: E402
from exercises.lab.wordle import chat, prompts  # noqa: E402

# the package re-exports a `feedback` function under the module's name, so fetch the module itself
feedback = importlib.import_module("exercises.lab.wordle.feedback")


def prompt_phrases() -> list[str]:
    """Fixed text that becomes single tokens: prompt lines, role headers and the env's stock phrases."""
    phrases = []
    for text in (prompts.SYSTEM_PROMPT, prompts.USER_PROMPT):
        phrases += [line for line in text.split("\n") if len(line) > 3]
    phrases += [feedback.NO_GUESS_MESSAGE, "You have ", " guesses left.", "You attempted an invalid move. Reason: ",
                "You have already guessed '", "' before. Please try a different word.",
                "user\n", "assistant\n", "system\n"]
    return phrases


def synthetic_game(answer: str, words: list[str], rng: random.Random) -> list[tuple[str, int]]:
    """(text, train?) segments of one game: prompt, then reply / env-text pairs until solved or 6 turns.

    The player guesses uniformly among the words still consistent with every feedback seen so far.
    """
    segments = [(chat.render_chat(prompts.initial_messages(), True), 0)]
    candidates = list(words)
    guessed: list[str] = []
    for turn in range(1, feedback.MAX_TURNS + 1):
        guess = rng.choice([w for w in candidates if w not in guessed] or words)
        segments.append((f"<guess>[{guess}]</guess>{chat.IM_END}", 1))
        if guess == answer or turn == feedback.MAX_TURNS:
            break
        env = feedback.env_message(guess, answer, turn, guessed)
        segments.append((chat.render_env_turn(env, assistant_closed=True), 0))
        marks = feedback.feedback(guess, answer)
        candidates = [w for w in candidates if feedback.feedback(guess, w) == marks]
        guessed.append(guess)
    return segments


def encode_games(tok, games: list[list[tuple[str, int]]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids [B, T] and a loss mask on the tokens that predict reply tokens."""
    rows, masks = [], []
    for segments in games:
        ids, mask = [], []
        for text, train in segments:
            seg = tok.encode(text, add_special_tokens=False)
            ids += seg
            mask += [train] * len(seg)
        rows.append(ids)
        masks.append(mask)
    width = max(map(len, rows))
    ids_t = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask_t = torch.zeros((len(rows), width))
    for i, (ids, mask) in enumerate(zip(rows, masks)):
        ids_t[i, : len(ids)] = torch.tensor(ids)
        mask_t[i, : len(mask)] = torch.tensor(mask, dtype=torch.float32)
    return ids_t, mask_t


def evaluate(directory: Path, *, games: int = 64, seed: int = 0) -> dict:
    """Play `games` games with the saved checkpoint (torch sampler, temperature 1) and average the reward parts."""
    from exercises.lab.rollout import TorchRolloutEngine
    from exercises.lab.wordle import WordleAgentLoop, compute_score

    tok = lab_tokenizer.load_tokenizer(directory)
    dims = checkpoint.dims_of_checkpoint(directory)
    stop = [tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")]
    engine = TorchRolloutEngine(dims, stop_ids=stop)
    engine.update_weights(checkpoint.state_dict_adapter(dims).to_hf(
        checkpoint.state_dict_adapter(dims).from_hf(checkpoint.load_hf_state_dict(directory))) | {
        "lm_head.weight": checkpoint.load_hf_state_dict(directory)["model.embed_tokens.weight"]})

    class _Tok:
        def encode(self, text):
            return tok.encode(text, add_special_tokens=False)

        def decode(self, ids):
            return tok.decode(ids, skip_special_tokens=False)

    loop = WordleAgentLoop(tokenizer=_Tok(), response_cap=448, max_tokens_per_turn=16)
    train_words, _ = data.split_words(data.load_words())
    totals: dict[str, float] = {}
    for g in range(games):
        engine.seed(seed * 1000 + g)
        out = loop.run(answer=train_words[g], generate_fn=engine.generate)
        parts = compute_score(out.text, train_words[g], extra_info=out.extra_fields)
        for key in ("score", "correct", "partial", "format"):
            totals[key] = totals.get(key, 0.0) + float(parts[key]) / games
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(checkpoint.SHIPPED_CHECKPOINT))
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--words", type=int, default=400, help="size of the synthetic games' word vocabulary")
    parser.add_argument("--pool", choices=("file", "train"), default="file",
                        help="draw that vocabulary from the whole word list (file) or the train split")
    parser.add_argument("--eval-only", action="store_true", help="only report the reward of the checkpoint at --out")
    args = parser.parse_args(argv)
    if args.eval_only:
        print({k: round(v, 3) for k, v in evaluate(Path(args.out)).items()})
        return 0

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    tok = lab_tokenizer.build_tokenizer(prompt_phrases())
    pad_id = tok.convert_tokens_to_ids("<|endoftext|>")
    eos_id = tok.convert_tokens_to_ids("<|im_end|>")
    dims = ModelDims(vocab_size=max(128, lab_tokenizer.vocab_size_for(tok)))
    model = build_titan_model(dims, seed=args.seed)
    if args.pool == "file":  # the shipped checkpoint: word-list file order
        pool = [w.strip() for w in data.WORDS_PATH.read_text().split() if len(w.strip()) == 5]
    else:
        pool = sorted(set(data.split_words(data.load_words())[0]))
    vocab = rng.sample(pool, min(args.words, len(pool)))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20) * max(0.1, 1 - s / args.steps))
    start = time.time()
    for step in range(args.steps):
        games = [synthetic_game(rng.choice(vocab), vocab, rng) for _ in range(args.batch)]
        ids, mask = encode_games(tok, games, pad_id)
        logits = model(ids[:, :-1])
        loss = grpo.cross_entropy_sft(logits, ids[:, 1:], mask[:, 1:])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 25 == 0 or step == args.steps - 1:
            print(f"sft step {step} loss {loss.item():.4f} ({time.time() - start:.1f}s)", flush=True)

    out = Path(args.out)
    adapter = checkpoint.state_dict_adapter(dims)
    hf_sd = adapter.to_hf({k: v.detach() for k, v in model.state_dict().items()})
    config = hf_config_dict(dims, eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=pad_id)
    checkpoint.save_hf_checkpoint(out, hf_sd, config)
    lab_tokenizer.save_tokenizer(tok, out)
    (out / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": eos_id, "pad_token_id": pad_id, "temperature": 1.0, "do_sample": True}, indent=2) + "\n")
    (out / "README.md").write_text(
        "Tiny Qwen3 (torchtitan Qwen3Model.Config, HF format) SFT-warmed on synthetic Wordle games.\n"
        f"Built by scripts/make_tiny_checkpoint.py --steps {args.steps} --seed {args.seed} --words {args.words} "
        f"--pool {args.pool}.\n"
        "Not a language model: it only knows the lab's Wordle prompt and reply format.\n"
    )
    print("warmth (64 games):", {k: round(v, 3) for k, v in evaluate(out).items()}, flush=True)
    print(f"wrote {out} ({sum(p.stat().st_size for p in out.iterdir()) / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
