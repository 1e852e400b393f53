#!/usr/bin/env python3
"""Drive one durable-mcp turn through the HTTP API, with the Python standard library only.

    python3 drive_turn.py --api http://127.0.0.1:8235 --session demo-1 \
        --mcp 'everything:npx -y @modelcontextprotocol/server-everything' \
        --call 'mcp__everything__echo {"message": "hi"}'

Starts an interactive turn, prints its servers paragraph and tools, sends each call (a retry with
the same call ID would return the recorded outcome, never run the tool again), follows a 202 to its
outcome, prints what the model should read, and ends the turn.

The token: DMCP_API_TOKEN when set, else the file `durable-mcp dev` (or `durable-mcp api` without
DMCP_API_TOKENS) writes, api.token in DMCP_DATA_DIR (default .data, as for durable-mcp), or --token-file.
"""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


class ApiError(Exception):
    def __init__(self, status, body):
        error = body.get("error", {}) if isinstance(body, dict) else {}
        super().__init__(f"HTTP {status} {error.get('code', '')}: {error.get('message', body)}")
        self.status = status
        self.code = error.get("code")


class Client:
    def __init__(self, base, token=None, timeout=120):
        self.base = base.rstrip("/")
        self.token = token
        self.timeout = timeout

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                return res.status, json.loads(res.read() or b"null")
        except urllib.error.HTTPError as err:
            payload = err.read()
            try:
                parsed = json.loads(payload)
            except ValueError:
                parsed = payload.decode(errors="replace")
            raise ApiError(err.code, parsed) from None

    def start_turn(self, session, workspace, inline_specs):
        path = f"/api/v1/sessions/{urllib.parse.quote(session, safe='')}/turns"
        body = {"workspace": workspace, "servers": {"inlineSpecs": inline_specs}}
        return self.request("POST", path, body)[1]

    def call(self, turn, call_id, name, arguments, render_model=True):
        query = "?render=model" if render_model else ""
        status, body = self.request("POST", turn["links"]["calls"] + query, {"id": call_id, "name": name, "arguments": arguments})
        # 202: the call is still running; its outcome is recorded, so polling is safe.
        while status == 202:
            time.sleep(0.5)
            status, body = self.request("GET", body["poll"] + query)
        return body

    def end(self, turn):
        return self.request("POST", turn["links"]["end"])[1]


def read_token(token_file=None):
    """DMCP_API_TOKEN, else the API's token file; None when there is neither (the API answers 401)."""
    if os.environ.get("DMCP_API_TOKEN"):
        return os.environ["DMCP_API_TOKEN"].strip()
    path = token_file or os.path.join(os.environ.get("DMCP_DATA_DIR") or ".data", "api.token")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or None
    except FileNotFoundError:
        if token_file:
            raise
        return None


def parse_call(spec, index):
    name, _, args = spec.strip().partition(" ")
    return f"call-{index + 1}", name, json.loads(args) if args.strip() else {}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--api", default=os.environ.get("DMCP_API_URL", "http://127.0.0.1:8235"))
    p.add_argument("--session", required=True)
    p.add_argument("--workspace", default=os.getcwd())
    p.add_argument("--mcp", action="append", default=[], help="an inline server 'name:command args' (repeatable)")
    p.add_argument("--call", action="append", default=[], help="a call 'TOOL JSON' (repeatable)")
    p.add_argument("--token-file", help="the API's token file (default: api.token in DMCP_DATA_DIR, or .data)")
    args = p.parse_args(argv)
    try:
        token = read_token(args.token_file)
    except OSError as err:
        print(f"error: cannot read the token file: {err}", file=sys.stderr)
        return 1
    client = Client(args.api, token=token)
    try:
        turn = client.start_turn(args.session, args.workspace, args.mcp)
        print(f"turn {turn['turnId']}")
        print(turn["serversParagraph"])
        print("tools: " + ", ".join(t["name"] for t in turn["tools"]))
        for i, spec in enumerate(args.call):
            call_id, name, arguments = parse_call(spec, i)
            result = client.call(turn, call_id, name, arguments)
            print(f"{call_id} {name}: {result['outcome']['status']}")
            print(result["model"]["text"])
        ended = client.end(turn)
        print(f"ended by {ended['endedBy']} after {len(ended['calls'])} call(s)")
    except ApiError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
