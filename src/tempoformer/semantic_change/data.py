"""Diachronic corpora for semantic change detection: the SemEval-2020 Task 1 layouts.

Two layouts are read:

- the official release (one folder per language)::

      targets.txt                      one target per line (English: with a POS tag, `plane_nn`)
      truth/graded.txt                 `target<TAB>score` (subtask 2), optional
      truth/binary.txt                 `target<TAB>0|1` (subtask 1), optional
      corpus1/lemma/*.txt[.gz]         one sentence per line, whitespace-tokenised
      corpus1/token/*.txt[.gz]         the same sentences, not lemmatised
      corpus2/...

- the derived small corpora (jnehrenworth/small-corpora-scd, `<language>/<file>.txt`, see
  `SMALL_CORPORA`), whose targets and truth come from a release folder without corpora.

POS tags (`pos_tags`). The English targets and their occurrences in the corpora carry a broad
POS tag (`plane_nn`); only target tokens are tagged. Two documented options:

- `strip` (default; the paper, following Montariol et al. 2021): tags are removed from the
  targets and from the tagged target tokens of the corpus, so every token `plane` is an
  occurrence of `plane_nn`, whatever its part of speech;
- `keep`: only the tagged tokens (`plane_nn`) are occurrences; untagged `plane` is not.

In both cases the model sees the word without its tag (a tag would only add word pieces `_ nn`);
results are reported under the original target name (`plane_nn`), which is how the truth names it.

Bad input stops with an InputError naming the file, the line and the problem; blank lines are
skipped, counted and logged (nothing is dropped silently: the rule every corpus reader follows,
src/tempoformer/data/ingest/__init__.py).
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import InputError

log = logging.getLogger(__name__)

POS_TAG = re.compile(r"^(?P<word>.+)_(?P<tag>[a-z]{1,4})$")
POS_TAG_OPTIONS = ("strip", "keep")
VARIANTS = ("lemma", "token")

# Derived small corpora: <language>/ -> the two files in time order (sorting the names would put
# German bznd (1946-1990) before dta (1800-1899)), and the official period labels.
SMALL_CORPORA: dict[str, dict] = {
    "english": {"files": ("ccoha1.txt", "ccoha2.txt"), "periods": ("1810", "1960"),
                "release": "semeval2020_ulscd_eng"},
    "german": {"files": ("dta.txt", "bznd.txt"), "periods": ("1800", "1946"),
               "release": "semeval2020_ulscd_ger"},
    "swedish": {"files": ("kubhist2a.txt", "kubhist2b.txt"), "periods": ("1790", "1895"),
                "release": "semeval2020_ulscd_swe"},
}


@dataclass
class DiachronicCorpus:
    """Sentences of each time point, targets, truth, and where each target occurs.

    `sentences[p][i]` is sentence i of period p as a tuple of words (tags of target tokens
    removed: this is what the model reads). `occurrences[target][p]` lists (i, word positions)
    of the sentences of period p that contain the target.
    """

    name: str
    periods: list[str]
    sentences: list[list[tuple[str, ...]]]
    targets: list[str]
    words: dict[str, str]
    occurrences: dict[str, list[list[tuple[int, tuple[int, ...]]]]]
    graded: dict[str, float] | None = None
    binary: dict[str, int] | None = None
    sources: list[str] = field(default_factory=list)
    skipped_blank_lines: int = 0

    def doc_counts(self) -> list[int]:
        return [len(s) for s in self.sentences]

    def summary(self) -> dict:
        return {
            "name": self.name, "periods": self.periods,
            "sentences": self.doc_counts(),
            "tokens": [sum(len(s) for s in period) for period in self.sentences],
            "targets": len(self.targets),
            "sentences_per_target": {
                t: [len(per) for per in self.occurrences[t]] for t in self.targets},
            "skipped_blank_lines": self.skipped_blank_lines, "sources": self.sources,
        }


# --------------------------------------------------------------------------- small files


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of a UTF-8 text file, gzip-compressed if named *.gz."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                try:
                    yield number, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as error:
                    raise InputError(path, f"line {number}",
                                     f"not UTF-8 text (byte {error.start})") from None
    except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
        if isinstance(error, FileNotFoundError):
            raise InputError(path, "-", "no such file") from None
        raise InputError(path, "-", f"cannot read: {error}") from None


def _require_file(path: Path) -> Path:
    if not path.is_file():
        raise InputError(path, "-", "is a folder, expected a file" if path.is_dir() else "no such file")
    return path


def read_targets(path: str | os.PathLike) -> list[str]:
    path = _require_file(Path(path))
    targets, seen = [], {}
    for number, line in _lines(path):
        word = line.strip()
        if not word:
            continue
        if len(word.split()) != 1:
            raise InputError(path, f"line {number}", f"expected one target word, got {line!r}")
        if word in seen:
            raise InputError(path, f"line {number}", f"duplicate target {word!r} (first on line {seen[word]})")
        seen[word] = number
        targets.append(word)
    if not targets:
        raise InputError(path, "-", "no targets")
    return targets


def read_truth(path: str | os.PathLike, kind: str) -> dict[str, float]:
    """`target<TAB>value` lines; kind 'graded' (a number in [0, 1]) or 'binary' (0 or 1)."""
    path = _require_file(Path(path))
    truth: dict[str, float] = {}
    for number, line in _lines(path):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 2:
            raise InputError(path, f"line {number}", f"expected 'target<TAB>value', got {line!r}")
        word, text = parts[0].strip(), parts[1].strip()
        try:
            value = float(text)
        except ValueError:
            raise InputError(path, f"line {number}", f"value {text!r} of {word!r} is not a number") from None
        if kind == "binary" and value not in (0.0, 1.0):
            raise InputError(path, f"line {number}", f"binary value of {word!r} must be 0 or 1, got {text!r}")
        if kind == "graded" and not 0.0 <= value <= 1.0:
            raise InputError(path, f"line {number}", f"graded value of {word!r} must be in [0, 1], got {text!r}")
        if word in truth:
            raise InputError(path, f"line {number}", f"duplicate target {word!r}")
        truth[word] = int(value) if kind == "binary" else value
    return truth


# --------------------------------------------------------------------------- corpora


def _corpus_files(path: Path) -> list[Path]:
    """A corpus given as a file, or a folder of *.txt / *.txt.gz files (sorted)."""
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.iterdir()
                       if p.is_file() and (p.name.endswith(".txt") or p.name.endswith(".txt.gz")))
        if not files:
            raise InputError(path, "-", "folder holds no *.txt or *.txt.gz corpus file")
        return files
    raise InputError(path, "-", "no such file or folder")


def _read_sentences(files: Sequence[Path]) -> tuple[list[tuple[str, ...]], list[tuple[Path, int]], int]:
    sentences, where, blank = [], [], 0
    for path in files:
        for number, line in _lines(path):
            words = tuple(map(sys.intern, line.split()))  # one string object per distinct word
            if not words:
                blank += 1
                continue
            sentences.append(words)
            where.append((path, number))
    if not sentences:
        raise InputError(files[0] if files else "-", "-", "corpus has no sentences")
    return sentences, where, blank


def _aligned_lemma_files(text_files: Sequence[Path]) -> list[Path] | None:
    """For corpus{i}/token/X, the lemma files corpus{i}/lemma/X when every one exists."""
    lemma = [p.parent.parent / "lemma" / p.name for p in text_files]
    return lemma if all(p.is_file() for p in lemma) else None


def build_corpus(
    name: str,
    periods: Sequence[str],
    period_files: Sequence[Sequence[Path]],
    targets: Sequence[str],
    graded: dict[str, float] | None = None,
    binary: dict[str, int] | None = None,
    pos_tags: str = "strip",
    locate_files: Sequence[Sequence[Path]] | None = None,
    sources: Sequence[str] = (),
) -> DiachronicCorpus:
    """Read the sentences of each period and index the target occurrences.

    `locate_files` (optional, per period) are line- and token-aligned files in which targets
    are looked up (the lemma files when the model reads the token files).
    """
    if pos_tags not in POS_TAG_OPTIONS:
        raise ValueError(f"pos_tags must be one of {POS_TAG_OPTIONS}, got {pos_tags!r}")
    if len(periods) != len(period_files) or len(periods) < 2:
        raise ValueError(f"need one corpus per period and at least two periods, got {len(period_files)}"
                         f" corpora for periods {list(periods)}")
    words: dict[str, str] = {}
    tagged: dict[str, str] = {}  # tagged token in the corpus -> target
    for target in targets:
        match = POS_TAG.match(target)
        words[target] = match["word"] if match and pos_tags == "strip" else target
        if match:
            tagged[target] = match["word"]
    searched: dict[str, list[str]] = {}
    for target, word in words.items():
        searched.setdefault(word, []).append(target)
    for word, same in searched.items():
        if len(same) > 1:
            log.warning("targets %s are the same word %r once POS tags are stripped: they get one score",
                        same, word)

    all_sentences, occurrences, blank = [], {t: [] for t in targets}, 0
    for p, files in enumerate(period_files):
        sentences, where, skipped = _read_sentences(files)
        blank += skipped
        lookup = sentences
        if locate_files is not None:
            lookup, lookup_where, _ = _read_sentences(locate_files[p])
            if len(lookup) != len(sentences):
                raise InputError(locate_files[p][0], "-", f"{len(lookup)} sentences, but the text files "
                                 f"{[str(f) for f in files]} have {len(sentences)}: not aligned")
        per_target: dict[str, list] = {t: [] for t in targets}
        clean = []
        for i, words_i in enumerate(sentences):
            keys = lookup[i]
            if locate_files is not None and len(keys) != len(words_i):
                path, number = where[i]
                raise InputError(path, f"line {number}", f"{len(words_i)} tokens, but the aligned line of "
                                 f"{lookup_where[i][0]} has {len(keys)}")
            found: dict[str, list[int]] = {}
            for j, key in enumerate(keys):
                if pos_tags == "strip" and key in tagged:
                    key = tagged[key]
                for target in searched.get(key, ()):
                    found.setdefault(target, []).append(j)
            for target, positions in found.items():
                per_target[target].append((i, tuple(positions)))
            # The model reads words without target POS tags.
            clean.append(tuple(tagged.get(w, w) for w in words_i) if tagged else words_i)
        all_sentences.append(clean)
        for target in targets:
            occurrences[target].append(per_target[target])
    if blank:
        log.info("%s: skipped %d blank lines", name, blank)
    for target in targets:
        counts = [len(per) for per in occurrences[target]]
        if min(counts) == 0:
            log.warning("%s: target %r does not occur in every period (sentences per period: %s)",
                        name, target, counts)
    return DiachronicCorpus(
        name=name, periods=[str(p) for p in periods], sentences=all_sentences, targets=list(targets),
        words=words, occurrences=occurrences, graded=graded, binary=binary,
        sources=[str(s) for s in sources], skipped_blank_lines=blank,
    )


def _check_truth(truth: dict, targets: Sequence[str], path: Path) -> None:
    missing = [t for t in targets if t not in truth]
    extra = [t for t in truth if t not in set(targets)]
    if missing or extra:
        raise InputError(path, "-", f"targets and truth differ: missing from truth {missing[:5]}"
                         f"{'...' if len(missing) > 5 else ''}, not in targets.txt {extra[:5]}")


def read_release(
    release: str | os.PathLike,
    corpora: Sequence[str | os.PathLike] | None = None,
    periods: Sequence[str] | None = None,
    pos_tags: str = "strip",
    variant: str = "lemma",
    name: str | None = None,
) -> DiachronicCorpus:
    """Read a SemEval-2020 Task 1 release folder.

    `corpora`: the corpus of each period as a file or a folder of *.txt[.gz]; default
    `corpus{1,2}/{variant}/` of the release. With variant 'token', targets are located in the
    aligned `lemma` files when they exist (the token text has inflected forms).
    `periods`: labels of the time points (default '1', '2', ...): used for time tokens (<1810>).
    """
    release = Path(release)
    if not release.is_dir():
        raise InputError(release, "-", "no such release folder" if not release.exists() else "not a folder")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    targets_path = release / "targets.txt"
    targets = read_targets(targets_path)
    truth = {}
    for kind in ("graded", "binary"):
        path = release / "truth" / f"{kind}.txt"
        if path.exists():
            truth[kind] = read_truth(path, kind)
            _check_truth(truth[kind], targets, path)
    if corpora is None:
        found = sorted(p for p in release.glob("corpus*") if p.is_dir())
        if not found:
            raise InputError(release, "-", "no corpus1/, corpus2/ folders (give the corpora explicitly)")
        corpora = [p / variant for p in found]
    period_files = [_corpus_files(Path(c)) for c in corpora]
    locate = None
    if variant == "token":
        aligned = [_aligned_lemma_files(files) for files in period_files]
        if all(a is not None for a in aligned):
            locate = aligned
        else:
            log.warning("token corpora without aligned lemma files: targets are matched in the token text")
    periods = list(periods) if periods is not None else [str(i + 1) for i in range(len(period_files))]
    return build_corpus(
        name or release.name, periods, period_files, targets, truth.get("graded"), truth.get("binary"),
        pos_tags=pos_tags, locate_files=locate,
        sources=[str(targets_path)] + [str(f) for files in period_files for f in files],
    )


def read_small_corpora(
    small_dir: str | os.PathLike,
    language: str,
    release: str | os.PathLike,
    pos_tags: str = "strip",
    name: str | None = None,
) -> DiachronicCorpus:
    """The derived small corpora (`<small_dir>/<language>/<two files>`), targets/truth of `release`."""
    if language not in SMALL_CORPORA:
        raise ValueError(f"language must be one of {sorted(SMALL_CORPORA)}, got {language!r}")
    spec = SMALL_CORPORA[language]
    folder = Path(small_dir) / language
    files = [folder / f for f in spec["files"]]
    for f in files:
        _require_file(f)
    return read_release(release, corpora=files, periods=spec["periods"], pos_tags=pos_tags,
                        name=name or f"small_{language}")


def load_dataset(spec: dict, name: str = "dataset") -> DiachronicCorpus:
    """A corpus from a config entry (see the semantic_change section of config/config.yaml):

    {format: release, release: DIR, corpora: [..]?, periods: [..]?, pos_tags, variant}
    {format: small_corpora, small_dir: DIR, language: english, release: DIR, pos_tags}
    {format: synthetic, path: DIR}  (a release written by `synthetic.write_release`)
    """
    fmt = spec.get("format", "release")
    pos_tags = spec.get("pos_tags", "strip")
    if fmt in ("release", "synthetic"):
        path = spec.get("release", spec.get("path"))
        if path is None:
            raise ValueError(f"dataset {name}: format {fmt} needs 'release' (a folder)")
        periods = spec.get("periods")
        if periods is None and fmt == "synthetic":
            from .synthetic import read_periods
            periods = read_periods(path)
        return read_release(path, corpora=spec.get("corpora"), periods=periods, pos_tags=pos_tags,
                            variant=spec.get("variant", "lemma"), name=name)
    if fmt == "small_corpora":
        return read_small_corpora(spec["small_dir"], spec["language"], spec["release"], pos_tags, name=name)
    raise ValueError(f"dataset {name}: unknown format {fmt!r} (release, small_corpora, synthetic)")
