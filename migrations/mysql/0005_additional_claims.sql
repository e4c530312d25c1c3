-- One table for every additional claim: of our Entity Configuration (scope
-- `entity_configuration`), of every subordinate statement without its own (scope
-- `subordinate_general`), and of one subordinate's statement (scope `subordinate`, with
-- subordinate_id; its claims go with it). A claim name is unique per scope and subordinate;
-- subordinate_id is NULL outside scope `subordinate`, so the unique key reads it as 0.
-- Subordinate claims keep their ids; Entity Configuration claims get new ones (they are also
-- addressed by name). The general claims, until now a JSON array in `settings`, are moved
-- into this table at start-up by `db::claims::move_general_claims` (in Rust, one transaction).

CREATE TABLE additional_claims (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    scope VARCHAR(32) NOT NULL,
    subordinate_id BIGINT NULL,
    -- MariaDB has no expression indexes: the unique key reads this instead.
    owner_key BIGINT AS (COALESCE(subordinate_id, 0)) VIRTUAL,
    claim VARCHAR(255) NOT NULL,
    value TEXT NOT NULL,
    crit BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE KEY additional_claims_unique (scope, owner_key, claim),
    FOREIGN KEY (subordinate_id) REFERENCES subordinates(id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO additional_claims (id, scope, subordinate_id, claim, value, crit, created_at, updated_at)
    SELECT id, 'subordinate', subordinate_id, claim, value, crit, created_at, updated_at
    FROM subordinate_additional_claims ORDER BY id;
INSERT INTO additional_claims (scope, subordinate_id, claim, value, crit, created_at, updated_at)
    SELECT 'entity_configuration', NULL, claim, value, crit, created_at, updated_at
    FROM ec_additional_claims ORDER BY id;

DROP TABLE subordinate_additional_claims;
DROP TABLE ec_additional_claims;
