"""`python -m harness.adapter TARGET [--max-memory MIB]`: the worker program's documented command
line (README.md). The program itself is `harness.worker.program`; this package only runs it."""
