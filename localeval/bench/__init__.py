"""`localeval bench`: how well each judge agrees with human labels, how fast, and at what cost.

Data flows one way: labeled records (labels.py) -> one evaluation per judge, each in its own
process (worker.py) -> judge against human (compare.py, with the statistics of agreement.py)
-> bench.json, bench.md and bench.html (report.py, charts from svg.py). command.py is the CLI.
"""
