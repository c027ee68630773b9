#!/bin/sh
# Rewrite the expected-failure baselines of the six client adapters (docs/clients.md), for instance
# after the suite changed. Needs `pip install -e '.[clients]'` and `npm ci` in
# examples/clients/node. Review the diff before committing: a line that went away is a case the
# client now passes; a new one is a new failure. Reasons written by hand are kept.
set -eu
cd "$(dirname "$0")/../.."
export LITELLM_LOCAL_MODEL_COST_MAP=True
run() { # baseline, then the target arguments
  baseline=$1
  shift
  conform run "$@" -q -j 2 --timeout 60 --write-xfail "examples/clients/$baseline"
}
run openai.xfail examples/clients/openai_adapter.py:Assembler
run litellm.xfail examples/clients/litellm_adapter.py:Assembler
run langchain.xfail examples/clients/langchain_adapter.py:Assembler
run pydantic-ai.xfail examples/clients/pydantic_ai_adapter.py:Assembler
run openai-node.xfail --exec 'node examples/clients/node/openai-node.mjs'
run vercel-ai.xfail --exec 'node examples/clients/node/vercel-ai.mjs'
