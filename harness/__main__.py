"""`python -m harness` is the `conform` command."""

from harness.cli import main

main(prog_name="conform")
