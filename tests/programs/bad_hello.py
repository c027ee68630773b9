"""Claims to speak protocol 9 (never offered) in its handshake."""

from __future__ import annotations

import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    hello = {"name": "bad-hello", "version": "0", "language": "python", "protocol": 9}
    print(json.dumps({"seq": request["seq"], **hello}), flush=True)
