"""Free-text LLM answers -> labels, the paper's post-processing (appendix E): "we apply
post-processing in LLM predictions to bucket them in the corresponding classification class
(e.g. if the LLM generates esc we mark it as an escalation)".

Rules, in order, on the lower-cased answer with a leading "output:"/"answer:"/"label:" and
quotes/markup stripped:
  1. the first word is a label's answer word or alias, or a prefix (>= 2 letters) of exactly
     one label's answer word ("esc" -> escalation, "swi" -> switch, "no" -> none);
  2. otherwise the phrase that occurs first in the answer wins (longest phrase on ties), over
     the answer words, the aliases, and negations of the change labels ("no switch",
     "not a switch", "no shift" ...), which go to the task's no-change label;
  3. otherwise the answer is unmatched: it gets the fallback label and is counted. The default
     fallback is the most frequent label of the training fold (the no-change class in every
     paper dataset), so an unmatched answer costs the minority classes, never invents a change.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .prompts import Task

PREFIX = re.compile(r"^\s*(?:(?:output|answer|label|category|class|prediction)\s*[:\-]\s*)+")
WORD = re.compile(r"[a-z][a-z\-]*")


def phrases(task: Task) -> list[tuple[str, str]]:
    """(phrase, label) pairs the answers are matched against."""
    out = [(task.words[label], label) for label in task.labels]
    for label, aliases in task.aliases.items():
        out += [(a.lower(), label) for a in aliases]
    if task.negation_label:
        for label in task.labels:
            if label == task.negation_label:
                continue
            w = task.words[label]
            article = "an" if w[0] in "aeiou" else "a"
            out += [(f"{neg} {w}", task.negation_label) for neg in ("no", "not", f"not {article}", "non")]
            out += [(f"{neg}-{w}", task.negation_label) for neg in ("no", "not", "non")]
    return out


def normalise(answer: str) -> str:
    text = answer.lower().strip()
    text = re.sub(r"[\"'`*_#<>\[\]()]", " ", text)
    text = PREFIX.sub("", text.strip())
    return re.sub(r"\s+", " ", text).strip()


def bucket(answer: str, task: Task) -> str | None:
    """The label of one answer, or None when nothing matches."""
    text = normalise(answer)
    pairs = phrases(task)
    first = WORD.match(text)
    if first:
        word = first.group(0).strip("-")
        exact = {label for p, label in pairs if p == word}
        if len(exact) == 1:
            # a single word that is also the start of a longer phrase ("no switch") is decided in rule 2
            if not any(p.startswith(word + " ") and text.startswith(p) for p, _ in pairs):
                return exact.pop()
        elif len(word) >= 2 and not exact:
            prefixed = {label for label in task.labels if task.words[label].startswith(word)}
            if len(prefixed) == 1:
                return prefixed.pop()
    best = None  # (start, -length, label)
    for phrase, label in pairs:
        m = re.search(rf"(?<![a-z]){re.escape(phrase)}(?![a-z])", text)
        if m and (best is None or (m.start(), -len(phrase)) < best[:2]):
            best = (m.start(), -len(phrase), label)
    return best[2] if best else None


@dataclass
class Bucketed:
    pred: np.ndarray  # label index per answer (fallback where unmatched)
    matched: np.ndarray  # bool per answer
    fallback: str

    def summary(self, answers: list[str], top: int = 20) -> dict:
        unmatched = [a for a, ok in zip(answers, self.matched) if not ok]
        return {
            "n": len(answers),
            "unmatched": len(unmatched),
            "unmatched_share": round(len(unmatched) / max(1, len(answers)), 4),
            "fallback": self.fallback,
            "answers": dict(Counter(a.strip() for a in answers).most_common(top)),
            "unmatched_examples": dict(Counter(a.strip() for a in unmatched).most_common(top)),
        }


def bucket_answers(answers: list[str], task: Task, labels: list[str], fallback: str) -> Bucketed:
    """Labels (as indices into `labels`) of many answers; unmatched ones get `fallback`."""
    if fallback not in labels:
        raise ValueError(f"fallback label {fallback!r} is not one of {labels}")
    index = {label: i for i, label in enumerate(labels)}
    found = [bucket(a, task) for a in answers]
    matched = np.array([f is not None for f in found], dtype=bool)
    pred = np.array([index[f if f is not None else fallback] for f in found], dtype=np.int64)
    return Bucketed(pred=pred, matched=matched, fallback=fallback)
