import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def make_posts():
    """Canonical post table from {timeline: [(seconds or None, label), ...]}."""
    from tempoformer.posts import posts_from_records

    def make(timelines: dict, dataset: str = "toy"):
        start = datetime(2020, 1, 1, tzinfo=timezone.utc)
        records = [
            {
                "timeline_id": tid, "post_id": f"{tid}-{i}", "order": i,
                "timestamp": None if t is None else start + timedelta(seconds=t),
                "text": f"post {i} of {tid}", "label": label,
            }
            for tid, posts in timelines.items()
            for i, (t, label) in enumerate(posts)
        ]
        return posts_from_records(records, dataset, "<test>")

    return make
