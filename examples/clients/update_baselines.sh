#!/bin/sh
# Rewrite the expected-failure baselines of the client adapters (docs/clients.md), for instance
# after the suite changed. Needs `pip install -e '.[clients]'`. Review the diff before committing:
# a line that went away is a case the client now passes; a new one is a new failure.
set -eu
cd "$(dirname "$0")/../.."
export LITELLM_LOCAL_MODEL_COST_MAP=True
conform run examples/clients/openai_adapter.py:Assembler -q -j 2 \
    --write-xfail examples/clients/openai.xfail
conform run examples/clients/litellm_adapter.py:Assembler -q -j 2 --timeout 60 \
    --write-xfail examples/clients/litellm.xfail
