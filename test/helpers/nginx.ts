/**
 * Debian's nginx as the reference proxy in tests (npm test installs it, scripts/test.ts): one worker, keep-alive to
 * the target, HTTP/1.1 upstream, its defaults otherwise (underscore headers dropped, 1xx and trailers not passed on).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { stopChild } from './teardown.js';
import path from 'node:path';
import { freePort } from '../../scripts/services/index.js';

/** Runs nginx with `dir/nginx.conf` in the foreground and resolves once it accepts connections on `port`. */
async function runNginx(dir: string, port: number): Promise<ChildProcess> {
  const child = spawn('nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'ignore' });
  for (let i = 0; ; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (up) return child;
    if (i > 100 || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error('nginx did not start');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Nginx {
  port: number;
  stop(): Promise<void>;
}

/** `timeoutS`: nginx's connect and read timeouts towards the target (a test gives the edge the same). */
export async function startNginx(targetPort: number, timeoutS = 3): Promise<Nginx> {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'nginx-'));
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const port = await freePort();
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log crit;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream target { server 127.0.0.1:${targetPort}; keepalive 16; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://target;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_read_timeout ${timeoutS}s;
      proxy_connect_timeout ${timeoutS}s;
      proxy_next_upstream off;
    }
  }
}
`,
  );
  const child = await runNginx(dir, port);
  return {
    port,
    stop: () => stopChild(child, 'nginx', { graceMs: 5000 }),
  };
}

export interface MtlsNginx extends Nginx {
  /** Reloads its configuration (and so the CRL file) as `nginx -s reload` does. */
  reload(): void;
  /** Its error log so far (level info: it names why each client certificate was refused). */
  log(): string;
}

/**
 * Debian's nginx as a relying party of our CA: TLS with client certificates verified against the CA certificates in
 * `caFile` and the CRLs in `crlFile` (nginx checks every certificate of the chain against a CRL, so both the root's
 * and the issuing CA's must be there), `ssl_verify_client on`: a client it admits gets 200 `SUCCESS`, one whose
 * certificate fails gets nginx's 400, and the error log says why (OpenSSL's verify error). The server's own
 * certificate is `certFile`/`keyFile`.
 */
export async function startMtlsNginx(files: { caFile: string; crlFile: string; certFile: string; keyFile: string }): Promise<MtlsNginx> {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'nginx-mtls-'));
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const port = await freePort();
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${files.certFile};
    ssl_certificate_key ${files.keyFile};
    ssl_client_certificate ${files.caFile};
    ssl_verify_client on;
    ssl_verify_depth 2;
    ssl_crl ${files.crlFile};
    location / { return 200 "$ssl_client_verify"; }
  }
}
`,
  );
  const child = await runNginx(dir, port);
  return {
    port,
    reload: () => void child.kill('SIGHUP'),
    log: () => readFileSync(path.join(dir, 'error.log'), 'utf8'),
    stop: () => stopChild(child, 'nginx', { graceMs: 5000 }),
  };
}
