"""Abstracts by year: readers, the paper's filter as a counted step, splits, and history.

Sources (a dataset lists one or more; each year is read from the first source whose `years`
include it, `years: null` meaning every year):

- `anthology_jsonl`: one JSON object per line (gzip or plain) with at least `id`, `year`,
  `abstract` and optionally `title` (shared/data/acl_abstracts/anthology_abstracts_2000_2022.jsonl.gz);
- `authors_lines`: a folder of the authors' per-year files `papers_YYYY.txt[.gz]`, one abstract
  per line (jlab-nlp/Future-Language-Modeling `paper_csv/`). Blank lines are skipped and counted.

Filter (Li & Flanigan's `data_process.py filter_out` without its langdetect calls), applied in
this order, the first matching reason counted per year: `shared_task` (the abstract contains
"shared task", "semeval" or "sem-eval"), `semeval_title` (the title or id contains "semeval"),
`short` (fewer than `min_words` whitespace words; the paper: more than 10 words), and optionally
`non_english` (a crude English test: the share of common English function words is below
`english_min_share`; langdetect is not installed here, the paper used it). Nothing is dropped
without being counted: corpus_counts.json has every year's raw count, each reason's count, the
kept count and the count left out by the per-split cap (a compute budget).

Splits by year: `train` (an inclusive range), `dev`, `test` and `future` (further years, e.g.
2022, two years after the last training year). Other years before the last training year are
`history` (they give statistics to the first training years, no training text); later years
not in a split are `unused`. Every year of a split must have abstracts after the filter.

History. A document of year y is predicted from the statistics of the `window` years before it:
y-window .. y-1 (`history_years`), never its own year or a later one. Years with no abstracts in
the corpus (before the first year) have no statistics (models see "absent"). The authors'
shortcut (their CPL and generation scripts hard-code the last training year as the previous
year, so 2021 is predicted from <= 2019 and dev and test share one bias) is the named option
`shortcut: true`: the history of a year after the last training year ends at that year.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..errors import InputError
from ..settings import settings_from_dict

log = logging.getLogger(__name__)

SPLITS = ("history", "train", "dev", "test", "future")
FILTER_REASONS = ("shared_task", "semeval_title", "short", "non_english")
SHARED_TASK_WORDS = ("shared task", "semeval", "sem-eval")
AUTHORS_FILE = re.compile(r"^papers_(?P<year>[^.]*)\.txt(\.gz)?$")

# Words of a text (an approximation of NLTK's word_tokenize: NLTK is installed, but word_tokenize
# and sent_tokenize need its punkt_tab data, a download not available offline): words with inner
# hyphens/apostrophes/dots kept together, every other non-space character a token of its own.
# Used for Table 1's tokens, content words and METEOR.
WORD = re.compile(r"\w+(?:[-'’.]\w+)*|[^\w\s]")
# Sentence ends for Table 1 (punkt is not available): ., ! or ? followed by space and a capital,
# digit or opening bracket/quote.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"“])")
# The crude English test of shared/data/acl_abstracts/SOURCE.md.
ENGLISH_FUNCTION_WORDS = frozenset(
    "the a an of and or in on at to for with by from as is are was were be been this that these those "
    "we our it its which not can has have into than".split())


def words(text: str) -> list[str]:
    return WORD.findall(text)


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text.strip()) if s]


def english_share(text: str) -> float:
    tokens = [t.lower() for t in text.split()]
    return sum(t in ENGLISH_FUNCTION_WORDS for t in tokens) / max(len(tokens), 1)


@dataclass
class Record:
    doc_id: str
    year: int
    text: str
    title: str = ""
    source: str = ""


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def parse_year(value, path, record) -> int:
    """A year as an int: an int, or a string of digits; anything else is bad input."""
    if isinstance(value, bool):
        raise InputError(path, record, f"year {value!r} does not parse as a year")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*\d{1,4}\s*", value):
        return int(value)
    raise InputError(path, record, f"year {value!r} does not parse as a year")


def read_anthology_jsonl(path: str | os.PathLike) -> list[Record]:
    """Records of the Anthology JSONL (see the module docstring); bad lines stop with an error."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "-", "file not found")
    records = []
    with _open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                raise InputError(path, f"line {lineno}", "blank line")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(path, f"line {lineno}", f"not JSON: {error}") from None
            if not isinstance(obj, dict):
                raise InputError(path, f"line {lineno}", "not a JSON object")
            record = f"line {lineno} (id {obj.get('id')!r})"
            for key in ("id", "year", "abstract"):
                if key not in obj:
                    raise InputError(path, record, f"no {key!r} field")
            year = parse_year(obj["year"], path, record)
            abstract = obj["abstract"]
            if not isinstance(abstract, str) or not abstract.strip():
                raise InputError(path, record, "empty abstract")
            records.append(Record(str(obj["id"]), year, " ".join(abstract.split()),
                                  str(obj.get("title") or ""), "anthology"))
    return records


def read_authors_lines(folder: str | os.PathLike, years: Iterable[int] | None = None) -> tuple[list[Record], dict]:
    """The authors' `papers_YYYY.txt[.gz]` files of `years` (all when None): records, and the
    blank lines skipped per year. A file name whose year does not parse stops with an error."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "-", "folder not found")
    wanted = None if years is None else set(years)
    records, blank = [], {}
    files = sorted(p for p in folder.iterdir() if p.name.startswith("papers_"))
    for path in files:
        match = AUTHORS_FILE.match(path.name)
        if not match:
            raise InputError(path, "file name", "not papers_YYYY.txt[.gz]")
        year = parse_year(match["year"], path, "file name")
        if wanted is not None and year not in wanted:
            continue
        with _open_text(path) as handle:
            for lineno, line in enumerate(handle, 1):
                text = " ".join(line.split())
                if not text:
                    blank[year] = blank.get(year, 0) + 1
                    continue
                records.append(Record(f"authors-{year}-{lineno}", year, text, "", "authors"))
    if wanted is not None:
        missing = sorted(wanted - {r.year for r in records})
        if missing:
            raise InputError(folder, f"years {missing}", "no papers_YYYY.txt file with text for these years")
    return records, blank


def read_sources(sources: Sequence[dict]) -> tuple[list[Record], dict]:
    """Every record of `sources`, each year from the first source that lists it; counts of blank
    lines per year. A source: {format: anthology_jsonl | authors_lines, path, years: [..] | null}."""
    taken: set[int] = set()
    out, blank = [], {}
    for i, source in enumerate(sources):
        fmt, path, years = source.get("format"), source.get("path"), source.get("years")
        if not path:
            raise InputError("config", f"source {i}", "no path")
        if fmt == "anthology_jsonl":
            records, skipped = read_anthology_jsonl(path), {}
        elif fmt == "authors_lines":
            records, skipped = read_authors_lines(path, years)
        else:
            raise InputError("config", f"source {i}", f"unknown format {fmt!r} (anthology_jsonl, authors_lines)")
        listed = None if years is None else set(years)
        mine = [r for r in records if (listed is None or r.year in listed) and r.year not in taken]
        for year, n in skipped.items():
            if year not in taken:
                blank[year] = blank.get(year, 0) + n
        taken |= {r.year for r in mine} | (listed or set())
        out += mine
        log.info("%s (%s): %d records", path, fmt, len(mine))
    return out, blank


@dataclass
class FilterSettings:
    paper: bool = True              # the authors' string filter (shared task, SemEval)
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    # the paper keeps abstracts of more than 10 words
    min_words: int = field(default=11, metadata={"range": ">= 0"})
    english: bool = False           # the crude English test (langdetect in the paper)
    english_min_share: float = field(default=0.12, metadata={"range": "[0, 1]"})

    @classmethod
    def from_dict(cls, d: dict | None) -> "FilterSettings":
        return settings_from_dict(cls, d, "filter")


def filter_reason(record: Record, settings: FilterSettings) -> str | None:
    """Why the paper's filter drops `record` (the first reason that applies), or None."""
    text = record.text.lower()
    if settings.paper and any(w in text for w in SHARED_TASK_WORDS):
        return "shared_task"
    if settings.paper and ("semeval" in record.title.lower() or "semeval" in record.doc_id.lower()):
        return "semeval_title"
    if len(record.text.split()) < settings.min_words:
        return "short"
    if settings.english and english_share(record.text) < settings.english_min_share:
        return "non_english"
    return None


@dataclass
class YearSplits:
    train: tuple[int, int]
    dev: int
    test: int
    future: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, d: dict) -> "YearSplits":
        for key in ("train", "dev", "test"):
            if key not in d or d[key] is None:
                raise InputError("config", "years", f"missing split {key!r}")
        train = d["train"]
        if not (isinstance(train, (list, tuple)) and len(train) == 2 and train[0] <= train[1]):
            raise InputError("config", "years.train", f"{train!r} is not a [first, last] year range")
        splits = cls((int(train[0]), int(train[1])), int(d["dev"]), int(d["test"]),
                     tuple(int(y) for y in d.get("future") or ()))
        if not splits.train[1] < splits.dev:
            raise InputError("config", "years", f"dev year {splits.dev} is not after the training years {train}")
        return splits

    def split_of(self, year: int) -> str:
        if self.train[0] <= year <= self.train[1]:
            return "train"
        if year == self.dev:
            return "dev"
        if year == self.test:
            return "test"
        if year in self.future:
            return "future"
        return "history" if year < self.train[0] else "unused"

    def split_years(self) -> dict[str, list[int]]:
        return {"train": list(range(self.train[0], self.train[1] + 1)), "dev": [self.dev],
                "test": [self.test], "future": list(self.future)}


def history_years(year: int, window: int, last_train_year: int, shortcut: bool = False) -> list[int]:
    """The years whose statistics predict year `year`, oldest first: the `window` years before
    it; with the authors' `shortcut`, a year after the last training year looks back from the
    last training year instead (2021 from ..2019)."""
    if window < 1:
        raise ValueError(f"history window must be >= 1, got {window}")
    end = year - 1
    if shortcut and year > last_train_year:
        end = last_train_year
    return list(range(end - window + 1, end + 1))


@dataclass
class Corpus:
    records: list[Record]               # kept and used, in (year, doc_id) order
    splits: YearSplits
    counts: dict = field(default_factory=dict)


def year_stats(records: Sequence[Record]) -> dict:
    """Abstracts, sentences, tokens (WORD) and whitespace words of a set of abstracts."""
    return {"abstracts": len(records), "sentences": sum(len(sentences(r.text)) for r in records),
            "tokens": sum(len(words(r.text)) for r in records),
            "whitespace_words": sum(len(r.text.split()) for r in records)}


def build_corpus(records: Sequence[Record], splits: YearSplits, filters: FilterSettings,
                 caps: dict | None = None, blank: dict | None = None, source: str = "sources") -> Corpus:
    """Filter (counted), split by year, cap per split (seeded sample, counted). An empty split
    year stops with an InputError naming the year."""
    caps = dict(caps or {})
    seed = int(caps.pop("seed", 0))
    unknown = set(caps) - set(SPLITS)
    if unknown:
        raise ValueError(f"unknown cap keys {sorted(unknown)}; one of {SPLITS} or seed")
    by_year: dict[int, list[Record]] = {}
    for r in records:
        by_year.setdefault(r.year, []).append(r)
    counts: dict[str, dict] = {}
    kept_by_year: dict[int, list[Record]] = {}
    for year in sorted(by_year):
        entry = {"split": splits.split_of(year), "raw": len(by_year[year]),
                 "blank_lines": int((blank or {}).get(year, 0)), **{f"dropped_{k}": 0 for k in FILTER_REASONS}}
        kept = []
        for r in by_year[year]:
            reason = filter_reason(r, filters)
            if reason is None:
                kept.append(r)
            else:
                entry[f"dropped_{reason}"] += 1
        entry["kept"] = len(kept)
        entry["stats"] = year_stats(kept)
        counts[str(year)] = entry
        kept_by_year[year] = sorted(kept, key=lambda r: r.doc_id)
    for split, years in splits.split_years().items():
        for year in years:
            if year not in by_year:
                raise InputError(source, f"year {year} ({split})", "no abstracts of this year in the sources")
            if not kept_by_year[year]:
                raise InputError(source, f"year {year} ({split})", "no abstracts left after the filter")
    used: list[Record] = []
    for year, kept in kept_by_year.items():
        split = splits.split_of(year)
        if split == "unused":
            counts[str(year)]["used"] = 0
            continue
        cap = caps.get(split)
        if cap is not None and len(kept) > cap:
            rng = np.random.default_rng([seed, year])
            keep = sorted(rng.choice(len(kept), size=int(cap), replace=False))
            kept = [kept[i] for i in keep]
        counts[str(year)]["capped_out"] = counts[str(year)]["kept"] - len(kept)
        counts[str(year)]["used"] = len(kept)
        used += kept
    return Corpus(used, splits, counts)


def load_corpus(spec: dict) -> Corpus:
    """A dataset spec of the config: {sources, years, filter, cap}."""
    if not spec.get("sources"):
        raise InputError("config", "sources", "no sources")
    records, blank = read_sources(spec["sources"])
    splits = YearSplits.from_dict(spec.get("years") or {})
    name = ", ".join(str(s.get("path")) for s in spec["sources"])
    return build_corpus(records, splits, FilterSettings.from_dict(spec.get("filter")), spec.get("cap"),
                        blank, name)


def write_corpus(corpus: Corpus, out_dir: str | os.PathLike) -> dict:
    """corpus.parquet (doc_id, year, split, source, title, text) and corpus_counts.json."""
    import polars as pl

    from ..atomic import write_text_atomic, write_with

    out = Path(out_dir)
    frame = pl.DataFrame({
        "doc_id": [r.doc_id for r in corpus.records], "year": [r.year for r in corpus.records],
        "split": [corpus.splits.split_of(r.year) for r in corpus.records],
        "source": [r.source for r in corpus.records], "title": [r.title for r in corpus.records],
        "text": [r.text for r in corpus.records]}, schema={"doc_id": pl.String, "year": pl.Int64,
                                                          "split": pl.String, "source": pl.String,
                                                          "title": pl.String, "text": pl.String})
    write_with(out / "corpus.parquet", lambda tmp: frame.write_parquet(tmp))
    summary = {"splits": {"train": list(corpus.splits.train), "dev": corpus.splits.dev,
                          "test": corpus.splits.test, "future": list(corpus.splits.future)},
               "years": corpus.counts,
               "used_per_split": {s: int((frame["split"] == s).sum()) for s in SPLITS}}
    write_text_atomic(out / "corpus_counts.json", json.dumps(summary, indent=1) + "\n")
    return summary


def read_corpus(path: str | os.PathLike):
    import polars as pl

    return pl.read_parquet(path)
