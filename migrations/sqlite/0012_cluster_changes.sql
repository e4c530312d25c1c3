-- Change propagation between replicas without NOTIFY (MariaDB, issue 19): every announcing
-- write bumps the one generation row (its row lock orders concurrent writers, so generations
-- commit in order) and logs what it touched under that generation, in its own transaction.
-- Replicas poll for generations above the last they applied. Created in every dialect so the
-- schemas stay alike; PostgreSQL replicas use pg_notify, SQLite does not cluster.
CREATE TABLE cluster_generation (
    id BIGINT NOT NULL PRIMARY KEY,
    generation BIGINT NOT NULL
);

INSERT INTO cluster_generation (id, generation) VALUES (1, 0);

CREATE TABLE cluster_changes (
    generation BIGINT NOT NULL PRIMARY KEY,
    origin VARCHAR(32) NOT NULL,
    payload TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
