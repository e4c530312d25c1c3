-- Admin API users (HTTP Basic). password_hash is an argon2id PHC string; it is never returned
-- by the API. Same conventions as 0001: times BIGINT Unix seconds, flags BIGINT 0/1.

CREATE TABLE users (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    username VARCHAR(255) NOT NULL UNIQUE,
    password_hash VARCHAR(512) NOT NULL,
    display_name VARCHAR(255) NOT NULL DEFAULT '',
    disabled BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
