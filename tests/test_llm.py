import re

import numpy as np
import pytest
import torch

from tempoformer.llm import llm_predict
from tempoformer.llm.bucketing import bucket, bucket_answers
from tempoformer.llm.generate import render
from tempoformer.llm.prompts import (
    TASKS,
    Example,
    build_prompt,
    format_gap,
    resolve_task,
    sample_shots,
    shot_counts,
)
from tempoformer.training.run import RunData
from tempoformer.data.windows import build_windows

LABELS = ["Sw", "N-Sw"]


@pytest.fixture
def data(make_posts):
    """10 LRS-like timelines of 6 posts a minute apart: t0-t6 train, t7 dev, t8-t9 test."""
    rng = np.random.default_rng(0)
    timelines = {f"t{k}": [(60 * i, "Sw" if rng.random() < 0.35 else "N-Sw") for i in range(6)]
                 for k in range(10)}
    posts = make_posts(timelines, dataset="lrs_toy")
    y = posts["label"].replace_strict({"Sw": 0, "N-Sw": 1}).to_numpy()
    tl = posts["timeline_id"].to_numpy()
    rows = {"train": np.flatnonzero(np.isin(tl, [f"t{k}" for k in range(7)])),
            "dev": np.flatnonzero(tl == "t7"), "test": np.flatnonzero(np.isin(tl, ["t8", "t9"]))}
    return RunData(posts=posts, labels=LABELS, y=y, rows=rows, streams=build_windows(posts, 3), embeddings=None)


def test_shots_are_k_per_label_seeded_and_from_training(data):
    train = data.rows["train"]
    a = sample_shots(data.y, train, 2, 5, seed=1)
    assert len(a) == 10 and np.bincount(data.y[a], minlength=2).tolist() == [5, 5]
    assert set(a) <= set(train) and len(set(a)) == 10
    assert np.array_equal(a, sample_shots(data.y, train, 2, 5, seed=1))
    assert not np.array_equal(a, sample_shots(data.y, train, 2, 5, seed=2))
    # "total": 5 in all, the extra one to the majority label (the authors' 3 none + 2 switch)
    assert shot_counts(np.array([0, 1, 1, 1]), 2, 5, "total").tolist() == [2, 3]
    with pytest.raises(ValueError, match="fewer than"):
        sample_shots(data.y, train, 2, 40, seed=0)


@pytest.mark.parametrize("style", ["mistral", "llama2"])
@pytest.mark.parametrize("level", ["post", "stream"])
def test_prompt_has_k_shots_per_label_then_the_query(style, level):
    task = TASKS["lrs"]
    shots = [Example(f"shot {i}", ["[2m before] older", "[1m before] old"], "Sw" if i % 2 else "N-Sw")
             for i in range(10)]
    query = Example("the query post", ["[5m before] q-history"])
    prompt = build_prompt(task, level, style, shots, query, times="gap")
    text = prompt.text()
    assert text.count("Output: switch") == 5 and text.count("Output: none") == 5
    assert text.count("Input: ") == 11 and text.index("Input: the query post") > text.index("Input: shot 9")
    assert ("Conversation History:" in text) == (level == "stream")
    assert ("q-history" in text) == (level == "stream")
    if style == "mistral":
        assert prompt.system is None
        assert ("<<<\nConversation History:" in text) == (level == "stream")
        assert text.rstrip().endswith(">>>")
    else:
        assert prompt.system == task.role
        assert text.rstrip().endswith('Only return "none" or "switch".\nLimit the answer to 1 word.')
        assert "Example 10\n" in text


def test_lrs_prompts_are_the_papers():
    """Tables 7 and 9 of the paper (the authors' released prompt texts)."""
    task = TASKS["lrs"]
    shots = [Example("a", label="N-Sw")]
    mistral = build_prompt(task, "post", "mistral", shots, Example("b")).user
    assert mistral.startswith(
        "You are a helpful, respectful and honest assistant for labeling online Twitter conversations "
        "between users.\nGiven the online post of a user in a conversation stream around a rumourous claim "
        "on a newsworthy event which it is discussed by tweets in the stream, determine if in the current "
        "post there is a switch with respect to the overall stance.\nAnswer with \"none\" for either the "
        "absence of a switch or cases where the numbers of supporting and opposing posts are equal and with "
        "\"switch\" for switch between the total number of oppositions (querying or denying) and supports or "
        "vice versa.\nYour task is to assess and categorize post input after <<<>>> into one of the following "
        "predefined outputs:\n\nnone\nswitch\n\nYou will only respond with the output. Do not include the word "
        "\"Output\". Do not provide explanations or notes.\n\n####\nHere are some examples:\n\n"
        "Input: a\nOutput: none\n###\n\n<<<\nInput: b\n>>>")
    llama = build_prompt(task, "stream", "llama2", [Example("a", ["h1", "h2"], "Sw")], Example("b", ["h3"]))
    assert llama.plain().startswith("[INST] <<SYS>>\nYou are a helpful, respectful and honest assistant for "
                                    "labeling online Twitter conversations between users.\n<</SYS>>\n\n"
                                    "Given the most recent online conversation history")
    assert "Example 1\nConversation History:\nh1\nh2\nInput: a\nOutput: switch\n\n" in llama.user
    talklife = build_prompt(TASKS["talklife"], "post", "llama2", [], Example("x")).user
    assert 'Only return "none", "escalation" or "switch".' in talklife


def test_task_from_labels():
    assert resolve_task("auto", ["N-Sw", "Sw"]).name == "lrs"
    assert resolve_task("auto", ["IE", "IS", "O"]).name == "talklife"
    assert resolve_task("auto", ["M", "R"]).name == "topic_shift"
    assert resolve_task("auto", ["New", "Cont"]).name == "chitchat"
    assert resolve_task("auto", ["A", "B"]).words == {"A": "a", "B": "b"}
    with pytest.raises(ValueError, match="has labels"):
        resolve_task("lrs", ["M", "R"])


@pytest.mark.parametrize("task,answers", [
    ("lrs", {"switch": "Sw", "Switch.": "Sw", "Output: switch": "Sw", '"switch"': "Sw", "swi": "Sw",
             "none": "N-Sw", "None": "N-Sw", "no": "N-Sw", "No switch": "N-Sw", "not a switch": "N-Sw",
             "non-switch": "N-Sw", "N-Sw": "N-Sw", "The answer is switch": "Sw",
             "There is no switch in this post": "N-Sw", "none\nswitch": "N-Sw",
             "I cannot label this": None, "": None, "s": None}),
    ("talklife", {"esc": "IE", "escalation": "IE", "Escalating mood": "IE", "switch": "IS", "sw": "IS",
                  "none": "O", "no change": "O", "no escalation": "O", "not an escalation": "O",
                  "This is a sudden shift": "IS", "maybe": None}),
    ("topic_shift", {"major": "M", "Major.": "M", "maj": "M", "shift": "R", "shifted": "R", "no shift": "M",
                     "the topic has shifted": "R", "digression": "R", "okay": None}),
    ("chitchat", {"new": "New", "continue": "Cont", "Cont": "Cont", "continues": "Cont",
                  "It starts a new conversation": "New", "not new": "Cont", "hello": None}),
])
def test_bucketing_maps_free_text_answers(task, answers):
    got = {a: bucket(a, TASKS[task]) for a in answers}
    assert got == answers


def test_unmatched_answers_get_the_fallback_and_are_counted():
    out = bucket_answers(["switch", "gibberish", "none", "??"], TASKS["lrs"], LABELS, fallback="N-Sw")
    assert out.pred.tolist() == [0, 1, 1, 1] and out.matched.tolist() == [True, False, True, False]
    summary = out.summary(["switch", "gibberish", "none", "??"])
    assert summary["unmatched"] == 2 and summary["unmatched_examples"] == {"gibberish": 1, "??": 1}
    with pytest.raises(ValueError, match="fallback"):
        bucket_answers(["x"], TASKS["lrs"], LABELS, fallback="maybe")


def test_format_gap():
    assert [format_gap(s) for s in (0, 12, 99, 3600, 5226, 2 * 86400 + 3 * 3600 + 5)] == \
        ["0s", "12s", "1m 39s", "1h", "1h 27m", "2d 3h"]


CHAT = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
NO_SYSTEM = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
             + CHAT)


def tiny_lm(path, chat_template=None, answer="switch", arch="gpt2"):
    """A tiny causal LM with a word-level tokenizer trained here. gpt2: its final LayerNorm is
    zeroed but for a bias on dimension 0, and only `answer`'s embedding has that dimension, so
    greedy decoding always says `answer`. llama: random weights (answers are noise)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    corpus = [t.role + " " + t.post_task + " " + t.stream_task + " " + t.answer_rule for t in TASKS.values()]
    corpus += ["Input Output Example History before post of t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 INST SYS"]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[EOS]"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    if chat_template:
        fast.chat_template = chat_template
    torch.manual_seed(0)
    if arch == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=fast.vocab_size, n_positions=2048, n_embd=16, n_layer=1,
                                           n_head=2, bos_token_id=2, eos_token_id=2, pad_token_id=0))
        with torch.no_grad():
            ln = model.transformer.ln_f
            ln.weight.zero_()
            ln.bias.zero_()
            ln.bias[0] = 1.0
            emb = model.transformer.wte.weight  # tied with the LM head
            emb[:, 0] = 0.0
            emb[fast.convert_tokens_to_ids(answer), 0] = 5.0
    else:
        model = LlamaForCausalLM(LlamaConfig(vocab_size=fast.vocab_size, hidden_size=16, intermediate_size=32,
                                             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=2048, bos_token_id=2, eos_token_id=2,
                                             pad_token_id=0))
    fast.save_pretrained(path)
    model.save_pretrained(path)
    return str(path)


def test_render_uses_chat_template_and_folds_system_when_unsupported(tmp_path):
    from transformers import AutoTokenizer

    prompt = build_prompt(TASKS["lrs"], "post", "llama2", [Example("a", label="Sw")], Example("b"))
    plain = AutoTokenizer.from_pretrained(tiny_lm(tmp_path / "plain"))
    assert render(prompt, plain) == (prompt.plain(), True)
    chat = AutoTokenizer.from_pretrained(tiny_lm(tmp_path / "chat", CHAT))
    text, special = render(prompt, chat)
    assert not special and text.startswith("<|system|>\nYou are") and text.endswith("<|assistant|>\n")
    strict = AutoTokenizer.from_pretrained(tiny_lm(tmp_path / "strict", NO_SYSTEM))
    text, _ = render(prompt, strict)
    assert text.startswith("<|user|>\nYou are a helpful") and "<|system|>" not in text


@pytest.mark.parametrize("level,style,template", [("post", "mistral", None), ("stream", "llama2", CHAT)])
def test_llm_predict_labels_every_test_post(data, tmp_path, level, style, template):
    path = tiny_lm(tmp_path / "lm", template, answer="switch")
    params = {"model": path, "level": level, "style": style, "shots": 2, "max_new_tokens": 3, "batch_size": 3}
    prob, info = llm_predict(data, params, window=3, seed=0, device="cpu")
    n = len(data.rows["test"])
    assert prob.shape == (n, 2) and np.array_equal(prob.sum(1), np.ones(n))
    # the model always answers "switch": only the generated tokens are bucketed, not the prompt
    # (whose first label word is "none")
    assert (prob.argmax(1) == 0).all()
    llm = info["llm"]
    assert llm["n"] == n and llm["unmatched"] == 0 and llm["answers"] == {"switch switch switch": n}
    assert [s["label"] for s in llm["shots"]].count("Sw") == 2 and len(llm["shots"]) == 4
    assert info["selected"]["task"] == "lrs" and np.isnan(info["dev_macro"])
    if level == "stream":
        assert info["selected"]["times"] == "gap"
        assert re.search(r"\[\d+m before\] post \d of t", llm["example_prompt"])
    again, info2 = llm_predict(data, params, window=3, seed=0, device="cpu")
    assert np.array_equal(again, prob) and info2["llm"]["shots"] == llm["shots"]


def test_noise_answers_fall_back_to_the_training_majority(data, tmp_path):
    path = tiny_lm(tmp_path / "llama", arch="llama")
    params = {"model": path, "shots": 1, "max_new_tokens": 2, "evaluate_dev": True, "fallback": "majority"}
    prob, info = llm_predict(data, params, window=3, seed=12, device="cpu")
    majority = LABELS[np.bincount(data.y[data.rows["train"]], minlength=2).argmax()]
    llm = info["llm"]
    assert prob.shape == (len(data.rows["test"]), 2) and llm["fallback"] == majority
    assert llm["unmatched"] == sum(llm["unmatched_examples"].values()) > 0
    assert 0.0 <= info["dev_macro"] <= 1.0 and llm["dev"]["n"] == len(data.rows["dev"])
    with pytest.raises(ValueError, match="unknown LLM params"):
        llm_predict(data, {"model": path, "shotz": 5}, 3, 0)


def test_stream_examples_show_times_only_when_the_timeline_has_them(make_posts):
    from tempoformer.llm.predict import ExampleMaker

    posts = make_posts({"a": [(0, "M"), (90, "R"), (4000, "R")], "b": [(None, "M"), (None, "R"), (None, "M")]})
    data = RunData(posts=posts, labels=["M", "R"], y=np.zeros(6, dtype=np.int64), rows={},
                   streams=build_windows(posts, 3), embeddings=None)
    timed, untimed = ExampleMaker(data, "stream", "gap", None)(np.array([2, 5]))
    assert timed.history == ["[1h 6m before] post 0 of a", "[1h 5m before] post 1 of a"]
    assert timed.text == "post 2 of a"
    assert untimed.history == ["post 0 of b", "post 1 of b"]
    absolute = ExampleMaker(data, "stream", "absolute", None)(np.array([1]))[0]
    assert absolute.history == ["[2020-01-01 00:00:00] post 0 of a"]
    assert absolute.text == "[2020-01-01 00:01:30] post 1 of a"
    assert ExampleMaker(data, "stream", "none", None)(np.array([1]))[0].history == ["post 0 of a"]
    assert ExampleMaker(data, "post", "gap", None)(np.array([2]))[0].history == []
    assert not ExampleMaker(data, "stream", "gap", None).has_times(np.array([3, 4, 5]))


def test_run_training_writes_llm_predictions_for_every_test_post(tmp_path, make_posts):
    """End to end through the training entry point: a stream-level, 1-shot LLM entry on saved
    posts, folds and windows -> metrics.json and predictions.parquet."""
    import json

    import polars as pl

    from tempoformer.data.folds import make_folds, split_rows
    from tempoformer.data.posts import write_parquet_atomic
    from tempoformer.training.run import TrainRun, run_training

    rng = np.random.default_rng(3)
    posts = make_posts({f"t{k}": [(60 * i, "Sw" if rng.random() < 0.35 else "N-Sw") for i in range(6)]
                        for k in range(10)}, dataset="lrs_toy")
    for name, table in (("posts", posts), ("folds", make_folds(posts, 5, 0.25, 0)),
                        ("streams", build_windows(posts, 3))):
        write_parquet_atomic(table, tmp_path / f"{name}.parquet")
    lm = tiny_lm(tmp_path / "lm", answer="switch")
    out = tmp_path / "run"
    metrics = run_training(TrainRun(
        posts_path=tmp_path / "posts.parquet", folds_path=tmp_path / "folds.parquet", out_dir=out,
        model="tiny_s_1shot",
        params={"model": lm, "level": "stream", "shots": 1, "max_new_tokens": 2, "batch_size": 4},
        labels=LABELS, window=3, fold=2, seed=0, streams_path=tmp_path / "streams.parquet", threads=1,
        device="cpu", model_type="llm",
    ))
    test_rows = split_rows(posts, pl.read_parquet(tmp_path / "folds.parquet"), 2)["test"]
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["test"] == metrics["test"] and saved["type"] == "llm" and saved["model"] == "tiny_s_1shot"
    assert saved["n"]["test"] == len(test_rows) > 0
    assert saved["selected"]["level"] == "stream" and saved["selected"]["window"] == 3
    assert saved["llm"]["n"] == len(test_rows) and saved["llm"]["unmatched"] == 0
    assert saved["llm"]["fallback"] == "N-Sw"
    preds = pl.read_parquet(out / "predictions.parquet")
    assert sorted(preds["post_id"]) == sorted(posts["post_id"].to_numpy()[test_rows])
    assert set(preds["pred"]) <= set(LABELS) and set(preds["gold"]) <= set(LABELS)
    # the LM always answers "switch", so every prediction is the LLM's, not the fallback (N-Sw)
    assert (preds["pred"] == "Sw").all() and (preds["prob_Sw"] == 1.0).all()
    assert not (out / "checkpoints").exists()


PAPER_CONFIGS = ("lrs", "topic_shift_mi", "talklife")


@pytest.mark.parametrize("config", PAPER_CONFIGS)
def test_paper_configs_list_the_llm_rows_switched_off(config):
    """Each paper config has Table 2's LLM rows (plus Llama2-S 10-shot) as `llm` entries of its
    dataset, valid, named as the tables' rows, and off until `model` is set."""
    from pathlib import Path

    import yaml

    from tempoformer.models.registry import validate_params
    from tempoformer.reporting.tables import MODEL_ORDER

    root = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((root / "config" / f"{config}.yaml").read_text())
    (dataset,) = cfg["datasets"].values()
    llms = {m: cfg["models"][m] for m in dataset["models"] if cfg["models"][m].get("type") == "llm"}
    expected = {(llm, level, shots) for llm in ("llama2", "mistral") for level in ("u", "s") for shots in (5, 10)}
    assert {tuple(re.fullmatch(r"(\w+?)_7b_([us])_(\d+)shot", m).groups()) for m in llms} == \
        {(llm, level, str(shots)) for llm, level, shots in expected}
    for name, entry in llms.items():
        params = entry["params"]
        validate_params(name, "llm", params)
        assert params["model"] is None  # off: the workflow skips it
        stream = "_s_" in name
        assert params["level"] == ("stream" if stream else "post")
        assert entry["windows"] == ([5] if stream else [1])  # the paper's S history: window 5
        assert params["shots"] == int(re.search(r"(\d+)shot", name).group(1))
        assert params["style"] == name.split("_")[0]
        assert name in MODEL_ORDER or name == "llama2_7b_s_10shot"  # the one row the paper lacks
