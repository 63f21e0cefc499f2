import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

/** nginx as Debian installs it (nginx-light), or undefined. */
export const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((path) => existsSync(path));
const OPENSSL = ['/usr/bin/openssl', '/usr/local/bin/openssl'].find((path) => existsSync(path));

/** Why tests of deploy/nginx/ cannot run here (a node:test skip reason), or false. */
export const nginxSkip: string | false =
  NGINX === undefined || OPENSSL === undefined
    ? `SKIPPED: ${NGINX === undefined ? 'nginx' : 'openssl'} is not installed (apt-get install nginx-light openssl; .ci/run does)`
    : false;

/** The public name deploy/nginx/user-records.conf serves, which the instances' ALLOWED_HOSTS holds. */
export const PUBLIC_NAME = 'users.example.com';
/** nginx's address as the instances see it: their TRUST_PROXY. */
export const PROXY_ADDRESS = '127.0.0.1';

export interface RunningNginx {
  /** https://127.0.0.1:port (send Host: PUBLIC_NAME; `agent()` does). */
  url: string;
  /** The plain HTTP port, which only points at HTTPS. */
  plainPort: number;
  /** The self-signed certificate the clients trust. */
  ca: Buffer;
  /** An agent of its own connections to nginx (keep-alive, `sockets` at most), from `localAddress`. */
  agent(options?: { sockets?: number; localAddress?: string }): Agent;
  stop(): Promise<void>;
}

/**
 * Runs deploy/nginx/user-records.conf as it is, with `upstreams` (host:port) in place of app1..app3,
 * 127.0.0.1 ports in place of 80 and 443, and a self-signed certificate for PUBLIC_NAME made with
 * openssl in `dir`: nginx as a process of the test's own (no root), with its prefix, pid, logs and
 * temporary files in `dir`. Resolves once it answers /healthz through an instance.
 */
export async function startNginx(dir: string, upstreams: readonly string[]): Promise<RunningNginx> {
  if (NGINX === undefined || OPENSSL === undefined) throw new Error(nginxSkip || 'no nginx');
  const tls = join(dir, 'tls');
  mkdirSync(tls, { recursive: true });
  const [crt, key] = [join(tls, `${PUBLIC_NAME}.crt`), join(tls, `${PUBLIC_NAME}.key`)];
  // An EC key: made in milliseconds, where RSA takes a busy machine seconds.
  execFileSync(OPENSSL, [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', crt, '-days', '2', '-subj', `/CN=${PUBLIC_NAME}`,
    '-addext', `subjectAltName=DNS:${PUBLIC_NAME}`,
  ], { stdio: 'ignore' }); // prettier-ignore
  const [port, plainPort] = [await freePort(), await freePort()];
  let site = readFileSync(new URL('../../deploy/nginx/user-records.conf', import.meta.url), 'utf8');
  const replace = (from: string, to: string) => {
    if (!site.includes(from)) throw new Error(`deploy/nginx/user-records.conf no longer holds '${from}'`);
    site = site.replaceAll(from, to);
  };
  upstreams.forEach((upstream, i) => replace(`app${i + 1}:3000`, upstream));
  replace('listen 80;', `listen 127.0.0.1:${plainPort};`);
  replace('listen 443 ssl;', `listen 127.0.0.1:${port} ssl;`);
  replace('/etc/nginx/tls', tls);
  if (/app\d:3000/.test(site)) throw new Error('the site names more instances than the test started');
  writeFileSync(join(dir, 'site.conf'), site);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
    (kind) => `${kind}_temp_path ${dir}/temp/${kind};`,
  );
  mkdirSync(join(dir, 'temp'), { recursive: true });
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off; master_process off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;\n` +
      `events { worker_connections 512; }\n` +
      `http { access_log off; ${temp.join(' ')} include ${dir}/site.conf; }\n`,
  );
  const child: ChildProcess = spawn(NGINX, ['-e', `${dir}/error.log`, '-p', dir, '-c', `${dir}/nginx.conf`], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ca = readFileSync(crt);
  const running: RunningNginx = {
    url: `https://127.0.0.1:${port}`,
    plainPort,
    ca,
    agent: ({ sockets = 1, localAddress } = {}) =>
      new Agent({ keepAlive: true, maxSockets: sockets, ca, servername: PUBLIC_NAME, localAddress }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  // nginx listens a moment after it starts; bounded: 300 tries, 100 ms apart.
  const agent = running.agent();
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) break;
    const status = await new Promise<number>((resolve) => {
      const req = request(`${running.url}/healthz`, { agent, headers: { host: PUBLIC_NAME } }, (res) => {
        res.resume().on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end();
    });
    if (status === 200) {
      agent.destroy();
      return running;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  agent.destroy();
  await running.stop();
  const log = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '';
  throw new Error(`nginx did not answer through the instances:\n${log}`);
}
