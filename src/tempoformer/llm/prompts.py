"""Few-shot prompts of the paper's appendix E, for each dataset's task, post level (U) and stream level (S).

Two templates, as in the paper:
  - "mistral" (Tables 7, 8): the Mistral classification-prompt guideline; the examples sit between
    "####" and "###", the input to label between <<< and >>>; one user message.
  - "llama2" (Tables 9, 10): a system message (the assistant's role) and a user message with
    numbered examples and "Only return ... Limit the answer to 1 word."
The LRS and Topic Shift texts are the authors' (their released `baselines/prompts.py`, verbatim,
typos included). TalkLife's (private data, no released prompt) and the default chitchat task's
are written in the same pattern. The paper's tables leave out where the input to label goes in
the Llama template: here it follows the examples, before the closing instructions.

Shots are sampled per label from the training fold with the run's seed (`sample_shots`); a
stream-level example shows the window's previous posts (oldest first) before the input post,
each with how long before the input post it was written when the timeline has timestamps (the
authors' prompts show no times; `times="none"` reproduces them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

STYLES = ("mistral", "llama2")
LEVELS = ("post", "stream")


@dataclass(frozen=True)
class Task:
    name: str
    labels: tuple[str, ...]  # the dataset's label names
    words: dict[str, str]  # label -> the answer word the model is asked to give
    role: str  # who the assistant is (Llama's system message)
    post_task: str  # U: what to decide about a post alone
    stream_task: str  # S: what to decide about the latest post given its history
    answer_rule: str  # what each answer word means
    negation_label: str | None = None  # the no-change class: "no <word>" / "not a <word>" land here
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # more phrases per label
    input_noun: str = "post"  # Mistral: "categorize <noun> input after <<<>>>"
    history_header: str = "Conversation History:"

    def output_words(self) -> list[str]:
        """Answer words in the order the prompt lists them: the no-change class first."""
        first = [self.negation_label] if self.negation_label else []
        return [self.words[label] for label in first + [lb for lb in self.labels if lb not in first]]


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            name="lrs",
            labels=("Sw", "N-Sw"),
            words={"Sw": "switch", "N-Sw": "none"},
            negation_label="N-Sw",
            aliases={"Sw": ("switched", "switching", "stance switch"), "N-Sw": ("no", "n-sw", "nsw")},
            role="You are a helpful, respectful and honest assistant for labeling online Twitter "
            "conversations between users.",
            post_task="Given the online post of a user in a conversation stream around a rumourous claim on "
            "a newsworthy event which it is discussed by tweets in the stream, determine if in the current "
            "post there is a switch with respect to the overall stance.",
            stream_task="Given the most recent online conversation history between users around a rumourous "
            "claim on a newsworthy event, determine if the most recent input user post is a switch with "
            "respect to the overall conversation stance.",
            answer_rule='Answer with "none" for either the absence of a switch or cases where the numbers of '
            'supporting and opposing posts are equal and with "switch" for switch between the total number '
            "of oppositions (querying or denying) and supports or vice versa.",
        ),
        Task(
            name="talklife",
            labels=("IE", "IS", "O"),
            words={"IE": "escalation", "IS": "switch", "O": "none"},
            negation_label="O",
            aliases={
                "IE": ("escalate", "escalates", "escalated", "escalating", "esc", "gradual"),
                "IS": ("switched", "switching", "sudden", "sudden shift", "mood switch"),
                "O": ("no", "no change", "no mood change", "nothing", "no-change"),
            },
            role="You are a helpful, respectful and honest assistant for labeling posts that users share on "
            "an online mental health platform.",
            post_task="Given the online post of a user in the user's timeline of posts, determine if in the "
            "current post there is a change in the user's mood.",
            stream_task="Given the most recent posting history of a user, determine if the most recent input "
            "user post shows a change in the user's mood with respect to the posting history.",
            answer_rule='Answer with "none" for the absence of a mood change, with "switch" for a sudden mood '
            'shift from positive to negative or vice versa and with "escalation" for a gradual mood '
            "progression from neutral or positive/negative to more positive/negative.",
            history_header="Posting History:",
        ),
        Task(
            name="topic_shift",
            labels=("M", "R"),
            words={"M": "major", "R": "shift"},
            negation_label="M",
            aliases={"M": ("main", "main topic", "major topic", "on topic", "on-topic"),
                     "R": ("shifted", "shifts", "digression", "sub-topic", "subtopic", "off topic",
                           "off-topic")},
            role="You are a helpful, respectful and honest assistant for labeling human open-domain "
            "conversation turns.",
            post_task="Given the conversation turn of a human in the conversation, determine if the topic of "
            "the conversation is around the original major converation topic or if the conversation topic "
            "has shifted.",
            stream_task="Given the most recent conversation turn history between humans in the conversation, "
            "determine if at the most recent input conversation turn the topic of the conversation is around "
            "the original major converation topic or if the conversation topic has shifted.",
            answer_rule='Answer with "major" when the conversation turn belongs to the topic with which the '
            "conversation commenced with and which is largely talked about and with \"shift\" when the "
            "conversation turn is part of a sub-topic which is a natural digression from the major topic or "
            "if it is part of a complete digression from the major topic.",
            input_noun="user",
        ),
        Task(
            name="chitchat",
            labels=("New", "Cont"),
            words={"New": "new", "Cont": "continue"},
            negation_label="Cont",
            aliases={"New": ("new conversation", "starts", "start", "first"),
                     "Cont": ("continues", "continued", "continuing", "continuation", "cont", "same",
                              "same conversation", "ongoing")},
            role="You are a helpful, respectful and honest assistant for labeling messages that users write "
            "in online chat conversations.",
            post_task="Given a message that a user wrote in an online chat, determine if the message starts a "
            "new conversation of the user or continues a conversation that is already going on.",
            stream_task="Given the most recent messages that a user wrote in online chats, determine if the "
            "most recent input message starts a new conversation of the user or continues the conversation "
            "of the messages before it.",
            answer_rule='Answer with "new" when the message is the first message of the user in a new '
            'conversation and with "continue" when the message continues the ongoing conversation.',
            input_noun="message",
            history_header="Message History:",
        ),
    )
}


def generic_task(labels: list[str]) -> Task:
    """For a dataset none of the paper's tasks fits: the label names are the answer words."""
    words = {label: label.lower() for label in labels}
    listed = ", ".join(f'"{w}"' for w in words.values())
    return Task(
        name="generic", labels=tuple(labels), words=words,
        role="You are a helpful, respectful and honest assistant for labeling posts in timelines of posts.",
        post_task="Given a post in a timeline of posts, determine which of the predefined outputs "
        "describes it.",
        stream_task="Given the most recent history of posts in a timeline, determine which of the predefined "
        "outputs describes the most recent input post.",
        answer_rule=f"Answer with one of {listed}.",
        history_header="History:",
    )


def resolve_task(name: str, labels: list[str]) -> Task:
    """A task by name, or with "auto" the paper task whose label set is the dataset's (else generic)."""
    if name == "auto":
        for task in TASKS.values():
            if set(task.labels) == set(labels):
                return task
        return generic_task(labels)
    if name == "generic":
        return generic_task(labels)
    if name not in TASKS:
        raise ValueError(f"unknown LLM task {name!r}; known: auto, generic, {', '.join(TASKS)}")
    task = TASKS[name]
    if set(task.labels) != set(labels):
        raise ValueError(f"task {name!r} has labels {list(task.labels)}, the dataset {list(labels)}")
    return task


@dataclass
class Example:
    """One post to show or to label: its text, the preformatted lines of its history (stream
    level), and its label (shots only)."""

    text: str
    history: list[str] = field(default_factory=list)
    label: str | None = None


@dataclass
class Prompt:
    """A prompt as chat messages (system may be None) in one of the two styles."""

    system: str | None
    user: str
    style: str

    def messages(self) -> list[dict[str, str]]:
        system = [{"role": "system", "content": self.system}] if self.system else []
        return system + [{"role": "user", "content": self.user}]

    def plain(self) -> str:
        """The [INST] format both paper models were trained on, for tokenizers without a chat
        template (the tokenizer adds the BOS token itself)."""
        if self.system:
            return f"[INST] <<SYS>>\n{self.system}\n<</SYS>>\n\n{self.user} [/INST]"
        return f"[INST] {self.user} [/INST]"

    def text(self) -> str:
        """System and user text as one message (for chat templates without a system role)."""
        return f"{self.system}\n\n{self.user}" if self.system else self.user


def clean_text(text: str, max_chars: int | None = None) -> str:
    """One line per post: whitespace runs (newlines included) become one space."""
    text = re.sub(r"\s+", " ", text or "").strip()
    if max_chars and len(text) > max_chars:
        text = text[:max_chars].rstrip() + "…"
    return text


def format_gap(seconds: float) -> str:
    """A time gap as its two largest units: '2d 3h', '1h 26m', '1m 39s', '12s', '1h'."""
    s = int(round(max(seconds, 0.0)))
    units = [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)]
    for i, (name, size) in enumerate(units):
        if s >= size or name == "s":
            first = f"{s // size}{name}"
            if name == "s":
                return first
            rest_name, rest_size = units[i + 1]
            rest = (s % size) // rest_size
            return f"{first} {rest}{rest_name}" if rest else first


def times_sentence(task: Task, times: str) -> str:
    header = task.history_header.rstrip(":").lower()
    if times == "gap":
        return (f"Each post of the {header} starts with how long before the input it was written, "
                "in square brackets.")
    if times == "absolute":
        return "Each post starts with the time (UTC) it was written, in square brackets."
    return ""


def _example_block(task: Task, ex: Example, level: str, answer: bool) -> str:
    lines = [task.history_header, *ex.history] if level == "stream" else []
    lines.append(f"Input: {ex.text}")
    if answer:
        lines.append(f"Output: {task.words[ex.label]}")
    return "\n".join(lines)


def build_prompt(task: Task, level: str, style: str, shots: list[Example], query: Example,
                 times: str = "none") -> Prompt:
    """The few-shot prompt for one post. times: "gap" | "absolute" | "none" (what the history
    lines carry; it only adds a sentence that explains them)."""
    if level not in LEVELS:
        raise ValueError(f"unknown prompt level {level!r}; known: {', '.join(LEVELS)}")
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r}; known: {', '.join(STYLES)}")
    description = task.post_task if level == "post" else task.stream_task
    note = times_sentence(task, times) if level == "stream" else ""
    intro = "\n".join(x for x in (description, note, task.answer_rule) if x)
    words = task.output_words()
    if style == "mistral":
        sep = "\n\n" if level == "stream" else "\n"
        examples = sep.join(_example_block(task, s, level, answer=True) for s in shots)
        user = (
            f"{task.role}\n{intro}\n"
            f"Your task is to assess and categorize {task.input_noun} input after <<<>>> into one of the "
            "following predefined outputs:\n\n" + "\n".join(words) + "\n\n"
            'You will only respond with the output. Do not include the word "Output". '
            "Do not provide explanations or notes.\n\n"
            f"####\nHere are some examples:\n\n{examples}\n###\n\n"
            f"<<<\n{_example_block(task, query, level, answer=False)}\n>>>"
        )
        return Prompt(system=None, user=user, style=style)
    examples = "\n\n".join(
        f"Example {i}\n{_example_block(task, s, level, answer=True)}" for i, s in enumerate(shots, 1)
    )
    quoted = [f'"{w}"' for w in words]
    only = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"
    user = (
        f"{intro}\n\n{examples}\n\n{_example_block(task, query, level, answer=False)}\n\n"
        f"Only return {only}.\nLimit the answer to 1 word."
    )
    return Prompt(system=task.role, user=user, style=style)


def shot_counts(train_labels: np.ndarray, num_labels: int, k: int, per: str) -> np.ndarray:
    """Shots per label. per="label": k of every label. per="total": k in all, split evenly, the
    remainder going to the most frequent training labels (the authors' 5-shot LRS prompt has
    3 "none" and 2 "switch")."""
    if per == "label":
        return np.full(num_labels, k, dtype=np.int64)
    if per != "total":
        raise ValueError(f"unknown shots_per {per!r}; known: label, total")
    counts = np.full(num_labels, k // num_labels, dtype=np.int64)
    freq = np.bincount(train_labels, minlength=num_labels)
    for c in np.argsort(-freq, kind="stable")[: k % num_labels]:
        counts[c] += 1
    return counts


def sample_shots(y: np.ndarray, train_rows: np.ndarray, num_labels: int, k: int, seed: int,
                 per: str = "label", prefer: np.ndarray | None = None) -> np.ndarray:
    """Rows of the few-shot examples, drawn without replacement per label from the training rows
    with a generator seeded by `seed`, then shuffled so labels are interleaved.

    prefer: bool per training row; a label's shots come from the preferred rows when it has
    enough of them (stream level: posts with a full window of history).
    Raises if a label has fewer training posts than shots.
    """
    train_rows = np.asarray(train_rows)
    rng = np.random.default_rng(seed)
    counts = shot_counts(y[train_rows], num_labels, k, per)
    chosen = []
    for c in range(num_labels):
        pool = train_rows[y[train_rows] == c]
        if prefer is not None:
            preferred = train_rows[(y[train_rows] == c) & prefer]
            if len(preferred) >= counts[c]:
                pool = preferred
        if len(pool) < counts[c]:
            raise ValueError(f"label {c} has {len(pool)} training posts, fewer than {counts[c]} shots")
        chosen.append(rng.choice(np.sort(pool), size=counts[c], replace=False))
    shots = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    return shots[rng.permutation(len(shots))]
