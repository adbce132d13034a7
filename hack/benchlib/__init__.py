"""hack/bench's parts: util (processes, tools), shapes (the bundles, captured from the engines),
measure (rows, wrapper detection, hyperfine, CPU, RSS, strace), report (docs/benchmarks.md)."""
