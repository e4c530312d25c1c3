#!/usr/bin/env python3
"""Hostile traffic for deploy/bench/hostile.sh (issue 31).

CONNECTIONS asyncio workers hammer every public endpoint of one Pharos instance for SECONDS:
valid requests, junk and random parameters, strangers named as trust anchors and subjects.
Each connection is bound to a source address drawn from ADDRESSES distinct loopback
addresses (127.64.0.0/10 is all routed to `lo` on Linux), so Pharos sees that many clients;
a connection sends up to 20 requests (keep-alive) and is then replaced by one from another
address. Every request has a 10 s deadline.

Prints one JSON object: per request class, the count of each status ("timeout" and "error"
for no answer).

Usage: hostile_client.py PORT SECONDS CONNECTIONS ADDRESSES CATALOGUE_JSON
The catalogue: {"classes": {NAME: [[METHOD, PATH_TEMPLATE, BODY_OR_NULL], ...]}} where
`{r}` in a template is replaced by a random token and `{n}` by a random number.
"""

import asyncio
import json
import random
import sys
import time
from collections import Counter, defaultdict

PORT, SECONDS, CONNECTIONS, ADDRESSES = (int(a) for a in sys.argv[1:5])
CATALOGUE = json.load(open(sys.argv[5]))["classes"]
PER_CONNECTION = 20
DEADLINE = 10.0

results = defaultdict(Counter)
names = list(CATALOGUE)


def source(i):
    # 127.64.x.y, x.y from 0.1 on: never 127.0.0.1 itself.
    i += 1
    return f"127.64.{i // 250}.{i % 250 + 1}"


def fill(template):
    return (
        template.replace("{r}", "%016x" % random.getrandbits(64))
        .replace("{n}", str(random.randrange(1_000_000)))
    )


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    close = headers.get("connection", "").lower() == "close"
    return status, close


async def worker(w, end):
    rnd = random.Random(w)
    while time.monotonic() < end:
        addr = source(rnd.randrange(ADDRESSES))
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", PORT, local_addr=(addr, 0)), DEADLINE
            )
        except (OSError, asyncio.TimeoutError):
            results["connect"]["error"] += 1
            await asyncio.sleep(0.05)
            continue
        try:
            for _ in range(PER_CONNECTION):
                if time.monotonic() >= end:
                    break
                cls = rnd.choice(names)
                method, path, body = rnd.choice(CATALOGUE[cls])
                path = fill(path)
                data = fill(body).encode() if body is not None else b""
                req = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nUser-Agent: hostile/{w}\r\n"
                if body is not None:
                    req += f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(data)}\r\n"
                writer.write(req.encode() + b"\r\n" + data)
                try:
                    status, close = await asyncio.wait_for(read_response(reader), DEADLINE)
                except asyncio.TimeoutError:
                    results[cls]["timeout"] += 1
                    break
                except (OSError, asyncio.IncompleteReadError, ValueError, asyncio.LimitOverrunError):
                    results[cls]["error"] += 1
                    break
                results[cls][str(status)] += 1
                if close:
                    break
        finally:
            writer.close()


async def main():
    end = time.monotonic() + SECONDS
    await asyncio.gather(*(worker(w, end) for w in range(CONNECTIONS)))
    print(json.dumps({k: dict(v) for k, v in results.items()}, sort_keys=True))


asyncio.run(main())
