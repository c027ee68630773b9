"""The worker: the program that runs a Python target behind conform's line protocol
(`program.py`, started as `python -m harness.adapter TARGET`), its fork server (`forkserver.py`:
the target imported once, each worker forked), and the preparation both share before the target
is imported (`prepare.py`). Nothing here is imported by conform itself: these run in the worker's
own process (docs/layout.md)."""
