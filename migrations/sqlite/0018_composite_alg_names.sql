-- The composite ML-DSA algorithms (issue 35) have names of up to 17 characters
-- ("ML-DSA-65-Ed25519"): signing_keys.alg grows from 16 to 32.
-- SQLite does not enforce a VARCHAR length: nothing to change; the migration keeps the three
-- dialects' versions in step.
SELECT 1;
