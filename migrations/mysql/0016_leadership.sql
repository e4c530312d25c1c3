-- Leadership among replicas by a lease row (issue 33), replacing the session advisory lock:
-- the replica named in holder leads until expires_ms, judged by the database's clock
-- (milliseconds since the Unix epoch), and renews it well before then. Taking the lease over
-- from another holder adds one to generation: leader-only jobs check, in the transaction of
-- their write, that the row still names them with the generation they started under (the
-- fencing token), so a deposed leader's write fails instead of landing. Created in every
-- dialect so the schemas stay alike; SQLite does not cluster and always leads.
CREATE TABLE leadership (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    holder VARCHAR(200) NOT NULL,
    generation BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO leadership (name, holder, generation, expires_ms) VALUES ('leader', '', 0, 0);
