"""One module per `vision-bench` sub-command (see `vision_bench.cli` for the protocol)."""
