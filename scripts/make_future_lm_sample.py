"""Write the future-LM stage's embedded default corpus: a seeded sample of real ACL Anthology
abstracts (years 2016-2022, all CC BY 4.0) from ../shared/data/acl_abstracts.

    python scripts/make_future_lm_sample.py [--per-year 48] [--seed 0]

The sample is drawn from the raw records (before the paper's filter), so the filter step of the
default run has something to count. Output: workflow/resources/future_lm/acl_sample_2016_2022.jsonl.gz
(gzip without a timestamp: the same bytes every time).
"""

import argparse
import gzip
import io
import json
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "data" / "acl_abstracts" / "anthology_abstracts_2000_2022.jsonl.gz"
OUT = REPO / "workflow" / "resources" / "future_lm" / "acl_sample_2016_2022.jsonl.gz"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-year", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--source", default=str(SOURCE))
    parser.add_argument("--output", default=str(OUT))
    args = parser.parse_args()
    by_year = {}
    with gzip.open(args.source, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if 2016 <= record["year"] <= 2022:
                by_year.setdefault(record["year"], []).append(line)
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as gz:
        for year in sorted(by_year):
            lines = by_year[year]
            rng = np.random.default_rng([args.seed, year])
            for i in sorted(rng.choice(len(lines), size=min(args.per_year, len(lines)), replace=False)):
                gz.write(lines[i].encode("utf-8"))
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_bytes(out.getvalue())
    print(f"{args.output}: {sum(min(args.per_year, len(v)) for v in by_year.values())} records")


if __name__ == "__main__":
    main()
