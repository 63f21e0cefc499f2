import { constants, KeyObject, sign as signBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';

/** How the provider answers a fetch of its keys. */
export type JwksMode = 'ok' | 'error' | 'garbage' | 'no-keys' | 'bad-key' | 'slow' | 'redirect' | 'huge';

/** A signing key of the provider: its private half signs tokens, its public JWK is published. */
export interface SigningKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicPem: string;
}

/** Makes a signing key (RS256, PS256, ES256, EdDSA...) with its public JWK tagged with kid, alg and use. */
export async function signingKey(kid: string, alg: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicJwk, publicPem: await exportSPKI(publicKey) };
}

/** Signs a token with `key`, the header naming its kid and alg (plus `header`), with these claims. */
export function sign(key: SigningKey, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid, ...header }).sign(key.privateKey);
}

/**
 * Signs any header and payload with an RSA key, byte for byte as given, as RS256 or (`pss`) as PS256:
 * jose refuses to sign what a verifier must refuse (an unknown `crit`, an RS256 key used for PS256).
 */
export function signRaw(key: SigningKey, header: Record<string, unknown>, payload: JWTPayload, pss = false): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const privateKey = KeyObject.from(key.privateKey);
  const signature = signBytes(
    'sha256',
    Buffer.from(input),
    pss ? { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } : privateKey,
  );
  return `${input}.${signature.toString('base64url')}`;
}

/**
 * An identity provider's key endpoint on 127.0.0.1 (node:http): serves `/jwks.json` with the keys
 * it holds now, answers as `mode` says, and counts every request it gets (with its path).
 */
export interface JwksServer {
  url: string;
  keys: JWK[];
  mode: JwksMode;
  /** Every path requested, in order. */
  requests: string[];
  close(): Promise<void>;
}

export async function startJwksServer(keys: JWK[] = []): Promise<JwksServer> {
  const state: JwksServer = { url: '', keys, mode: 'ok', requests: [], close: async () => {} };
  const held = new Set<ServerResponse>();
  const server: Server = createServer((request, response) => {
    state.requests.push(request.url ?? '');
    switch (state.mode) {
      case 'error':
        response.writeHead(500).end('provider fault');
        return;
      case 'garbage':
        response.writeHead(200, { 'content-type': 'application/json' }).end('<html>not json');
        return;
      case 'no-keys':
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":"none"}');
        return;
      case 'bad-key':
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ keys: state.keys.map((key) => ({ ...key, n: 'AA', x: 'AA', y: 'AA' })) }));
        return;
      case 'slow':
        // Never answers: the service's fetch must give up on its own.
        held.add(response);
        return;
      case 'redirect':
        response.writeHead(302, { location: `${state.url}/elsewhere` }).end();
        return;
      case 'huge':
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ keys: state.keys, padding: 'x'.repeat(1024 * 1024) }));
        return;
      default:
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: state.keys }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
