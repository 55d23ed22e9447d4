"""``import helix_stream`` takes under 150 ms and does not import litellm.

Run: ``.venv/bin/python bench/bench_import.py`` (or ``make bench``).

Each sample is a fresh interpreter; the time is measured inside it (``perf_counter`` around the
import), so interpreter start-up is not counted. Median of 15.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = (
    "import json, sys, time; t = time.perf_counter(); import helix_stream as hs; "
    "t1 = time.perf_counter(); hs.stream_text; hs.Executor; hs.SQLiteStore; hs.tool; "
    "print(json.dumps([t1 - t, time.perf_counter() - t, 'litellm' in sys.modules]))"
)


def main() -> int:
    imports, first_use = [], []
    for _ in range(15):
        out = subprocess.run(
            [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, cwd=ROOT
        )
        seconds, with_use, imported_litellm = json.loads(out.stdout)
        assert not imported_litellm, "helix_stream imported litellm"
        imports.append(seconds)
        first_use.append(with_use)
    median = statistics.median(imports) * 1000
    print(f"import helix_stream: median {median:.1f} ms (names load lazily); litellm not imported")
    # Honest second figure: what the first use of the core API (loop, executor, stores) costs.
    print(
        f"import + first use of stream_text/Executor/SQLiteStore/tool: median {statistics.median(first_use) * 1000:.1f} ms"
    )
    ok = median < 150
    print(f"budget (< 150 ms): {'OK' if ok else 'OVER BUDGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
