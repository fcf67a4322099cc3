"""Schemathesis hooks for infra/scripts/fuzz-api (loaded through SCHEMATHESIS_HOOKS).

- The document describes the optional `Idempotency-Key` header of the mutating endpoints. The
  fuzzer leaves it out of every request: random keys repeated across unrelated requests would
  replay earlier answers instead of reaching the handlers. Its behaviour is tested where it is
  implemented.
- Webhook deliveries whose generated `X-Hub-Signature-256` is well formed are signed with the
  gateway's secret (`FUZZ_WEBHOOK_SECRET`), so the payloads reach the webhook handler; malformed
  or missing signatures are sent as generated and must be refused.
"""

import hashlib
import hmac
import json
import os
import re

import schemathesis

IDEMPOTENCY_KEY = "#/components/parameters/IdempotencyKey"
WELL_FORMED_SIGNATURE = re.compile(r"^sha256=[0-9a-f]{64}$")


@schemathesis.hook
def before_load_schema(ctx, raw_schema):
    for item in raw_schema.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict) and "parameters" in operation:
                operation["parameters"] = [
                    p for p in operation["parameters"] if p.get("$ref") != IDEMPOTENCY_KEY
                ]


@schemathesis.hook
def before_call(ctx, case, kwargs):
    secret = os.environ.get("FUZZ_WEBHOOK_SECRET")
    if not secret or case.path != "/webhooks/github" or not case.headers:
        return
    name = next((k for k in case.headers if k.lower() == "x-hub-signature-256"), None)
    if name is None or not WELL_FORMED_SIGNATURE.match(str(case.headers[name])):
        return
    if not isinstance(case.body, (dict, list, str, int, float, bool)):
        return
    payload = json.dumps(case.body).encode()
    kwargs["data"] = payload
    digest = hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()
    case.headers[name] = f"sha256={digest}"
