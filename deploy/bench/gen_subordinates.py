#!/usr/bin/env python3
"""Bulk-loads N generated subordinates into a migrated Pharos database, in minutes for a
million (batched inserts / COPY, not the Admin API one by one).

    gen_subordinates.py N sqlite PATH
    gen_subordinates.py N postgres DSN      (needs psql)
    gen_subordinates.py N mysql DSN         (MariaDB/MySQL, needs the mysql client)

Subordinate i is https://sub{i:07d}.example.org with one P-256 key (kid k{i}); odd ones are
registered as openid_provider, even ones as openid_relying_party, and every 100th also as
federation_entity with metadata that names a fetch endpoint (an intermediate, for the list
endpoint's `intermediate=true` filter). The tables must be empty (a freshly migrated database).
"""

import json
import subprocess
import sys
import time

KEY = {"kty": "EC", "crv": "P-256",
       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}


def entity_id(i):
    return f"https://sub{i:07d}.example.org"


def rows(n, now):
    """(subordinate row, [entity types]) for i in 1..=n."""
    for i in range(1, n + 1):
        jwks = json.dumps({"keys": [dict(KEY, kid=f"k{i}")]}, separators=(",", ":"))
        types = ["openid_provider" if i % 2 else "openid_relying_party"]
        metadata = None
        if i % 100 == 0:
            types.append("federation_entity")
            metadata = json.dumps({"federation_entity": {
                "federation_fetch_endpoint": f"{entity_id(i)}/fetch"}}, separators=(",", ":"))
        yield (i, entity_id(i), "", "active", jwks, metadata, now, now), types


def load_sqlite(n, path, now):
    import sqlite3
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
    subs, types = [], []
    cur = db.cursor()
    cur.execute("BEGIN")

    def flush():
        cur.executemany(
            "INSERT INTO subordinates (id, entity, entity_id, description, status, jwks, metadata, "
            "created_at, updated_at) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?)", subs)
        cur.executemany(
            "INSERT INTO subordinate_entity_types (subordinate_id, entity_type) VALUES (?, ?)",
            types)
        subs.clear()
        types.clear()

    for row, ts in rows(n, now):
        subs.append(row)
        types.extend((row[0], t) for t in ts)
        if len(subs) >= 50_000:
            flush()
    flush()
    db.commit()
    db.close()


def load_postgres(n, dsn, now):
    def tsv(v):
        return "\\N" if v is None else str(v)

    script = subprocess.Popen(["psql", "-q", "-v", "ON_ERROR_STOP=1", dsn],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    w = script.stdin.write
    w("BEGIN;\nCOPY subordinates (id, entity, entity_id, description, status, jwks, metadata, "
      "created_at, updated_at) FROM STDIN;\n")
    types = []
    for row, ts in rows(n, now):
        # The default entity's (1): the bench measures a single-entity deployment.
        w("\t".join(tsv(v) for v in (row[0], 1, *row[1:])) + "\n")
        types.extend((row[0], t) for t in ts)
    w("\\.\nCOPY subordinate_entity_types (subordinate_id, entity_type) FROM STDIN;\n")
    for sid, t in types:
        w(f"{sid}\t{t}\n")
    w("\\.\nSELECT setval(pg_get_serial_sequence('subordinates', 'id'), "
      f"{max(n, 1)});\nCOMMIT;\nANALYZE subordinates;\nANALYZE subordinate_entity_types;\n")
    script.stdin.close()
    if script.wait() != 0:
        sys.exit("psql failed")


def load_mysql(n, dsn, now):
    from urllib.parse import urlparse
    u = urlparse(dsn)
    args = ["mysql", "-h", u.hostname or "127.0.0.1", "-P", str(u.port or 3306),
            "-u", u.username or "root"]
    if u.password:
        args.append(f"-p{u.password}")
    args.append(u.path.lstrip("/"))
    script = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    w = script.stdin.write

    def lit(v):
        if v is None:
            return "NULL"
        if isinstance(v, int):
            return str(v)
        return "'" + v.replace("\\", "\\\\").replace("'", "''") + "'"

    w("SET autocommit = 0;\n")
    subs, types = [], []

    def flush():
        if subs:
            w("INSERT INTO subordinates (id, entity, entity_id, description, status, jwks, "
              "metadata, created_at, updated_at) VALUES " + ",".join(subs) + ";\n")
            w("INSERT INTO subordinate_entity_types (subordinate_id, entity_type) VALUES "
              + ",".join(types) + ";\n")
        subs.clear()
        types.clear()

    for row, ts in rows(n, now):
        # The default entity's (1): the bench measures a single-entity deployment.
        subs.append("(" + lit(row[0]) + ",1," + ",".join(lit(v) for v in row[1:]) + ")")
        types.extend(f"({row[0]},{lit(t)})" for t in ts)
        if len(subs) >= 2_000:
            flush()
    flush()
    w("COMMIT;\n")
    script.stdin.close()
    if script.wait() != 0:
        sys.exit("mysql failed")


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("sqlite", "postgres", "mysql"):
        sys.exit(__doc__)
    n, kind, target = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    t0 = time.time()
    load = {"sqlite": load_sqlite, "postgres": load_postgres, "mysql": load_mysql}[kind]
    load(n, target, int(t0))
    print(f"{time.time() - t0:.1f}")


if __name__ == "__main__":
    main()
