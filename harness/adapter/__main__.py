"""`python -m harness.adapter TARGET [--max-memory MIB]`: run the worker program."""

from harness.worker.program import main

main(prog_name="python -m harness.adapter")
