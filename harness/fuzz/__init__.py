"""`conform fuzz`'s search: the loop (`loop.py`: draw a stream, run it through the target and the
reference, shrink a difference) and the stream model it draws from (`model/`: the feature
catalogue, the hypothesis strategies, the fields of neighbouring servers). The command is
`harness.cli.fuzz`; docs/fuzz.md says how it searches."""
