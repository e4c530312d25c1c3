-- A pushed signed JWK Set must be newer than the last one accepted (issue 22): the iat of that push.
ALTER TABLE subordinates ADD COLUMN jwks_push_iat BIGINT NULL;
