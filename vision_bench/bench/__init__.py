"""Benchmarks over studies (`run_bench`), their reports, and the metric-comparison study.

    from vision_bench.bench import run_bench, summary_table
    result = run_bench("configs/bench_smoke.yaml", "out/bench_smoke")
    print(summary_table(result))   # every number is also in out/bench_smoke/results.csv

On many machines, each runs one shard (`num_shards=8, shard_index=k`) into a shared folder, then one
`run_bench(..., collect_only=True)` writes the report and results (see `vision_bench.bench.cells`).
"""

from vision_bench.bench.config import BenchConfig
from vision_bench.bench.runner import BenchResult, run_bench, summary_table

__all__ = ["BenchConfig", "BenchResult", "run_bench", "summary_table"]
