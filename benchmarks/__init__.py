"""minibroker's benchmark (`make bench`): real clients against minibroker and, when installed, Tansu, in
one run; JSON results, ratios against targets, and a chart. See docs/inside/performance.md."""
