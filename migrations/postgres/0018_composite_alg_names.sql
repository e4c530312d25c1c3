-- The composite ML-DSA algorithms (issue 35) have names of up to 17 characters
-- ("ML-DSA-65-Ed25519"): signing_keys.alg grows from 16 to 32.
ALTER TABLE signing_keys ALTER COLUMN alg TYPE VARCHAR(32);
