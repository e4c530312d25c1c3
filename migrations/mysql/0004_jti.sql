-- Client assertion identifiers already accepted (storage.endpoint_auth.jti_backend = db).
-- jti is the hex SHA-256 of issuer and jti, so its length is fixed whatever clients send.
-- Rows expire with the assertion and are deleted every jti_cleanup_interval.

CREATE TABLE jtis_used (
    jti VARCHAR(64) NOT NULL PRIMARY KEY,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE INDEX jtis_used_expires_at ON jtis_used (expires_at);
