"""`conform fuzz`'s search: the run (`loop.py`, its `-j` processes in `jobs.py`), one search
(`search.py`: draw a stream, `check.py` it against the target and the reference, settle a
difference), the guide that steers it (`guide.py`: a coverage map of the catalogue and the
reference's lines), the shrinker (`shrink.py`, cutting payloads at `spans.py`'s spans), keeping a
finding as a case (`save.py`), and the stream model it draws from (`model/`: the feature
catalogue, a seeded generator over it, the fields of neighbouring servers). The command is
`harness.cli.fuzz`; docs/fuzz.md says how it searches."""
