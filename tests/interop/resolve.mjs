// Independent client check: resolve a trust chain served by Pharos with
// @openid-federation/core (Animo, TypeScript) and print what it found as JSON.
// Usage: node resolve.mjs <entity_id> <trust_anchor_id>
import { resolveTrustChains } from '@openid-federation/core';
import { webcrypto } from 'node:crypto';

const [entityId, trustAnchor] = process.argv.slice(2);

const curves = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };
const hashes = { ES256: 'SHA-256', ES384: 'SHA-384', ES512: 'SHA-512' };

// Signature verification with WebCrypto: the library leaves cryptography to the caller.
async function verifyJwtCallback({ header, data, signature, jwk }) {
  const alg = header.alg;
  if (!curves[alg]) throw new Error(`unsupported alg ${alg}`);
  const key = await webcrypto.subtle.importKey(
    'jwk', { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y },
    { name: 'ECDSA', namedCurve: curves[alg] }, false, ['verify']);
  return webcrypto.subtle.verify({ name: 'ECDSA', hash: hashes[alg] }, key, signature, data);
}

try {
  const chains = await resolveTrustChains({
    entityId, trustAnchorEntityIds: [trustAnchor], verifyJwtCallback,
  });
  console.log(JSON.stringify({
    chains: chains.length,
    lengths: chains.map((c) => c.chain.length),
    metadata: chains[0]?.resolvedLeafMetadata ?? null,
    // The leaf's trust marks as the client parsed them (its schema requires `id`).
    trust_marks: chains[0]?.rawLeafEntityConfiguration?.trust_marks ?? [],
  }));
} catch (e) {
  console.log(JSON.stringify({ error: String(e?.stack ?? e), cause: e?.cause?.issues ?? String(e?.cause ?? '') }));
  process.exit(1);
}
