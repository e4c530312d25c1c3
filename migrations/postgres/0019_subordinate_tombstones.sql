-- Deleted subordinates (issue 36): the extended subordinate listing's time filters report a
-- subordinate that was deleted after a client last looked (`revoked`), so its identifier,
-- registration time and deletion time outlive the row. Written in the deleting transaction;
-- registering the identifier again removes it.
CREATE TABLE subordinate_tombstones (
    entity BIGINT NOT NULL,
    entity_id VARCHAR(512) NOT NULL,
    registered_at BIGINT NOT NULL,
    revoked_at BIGINT NOT NULL,
    PRIMARY KEY (entity, entity_id)
);
