/**
 * The limit bench/api.ts compares the service with: a bare node:http server doing the same SQL work as the service's
 * routes, against the same PostgreSQL, over a pg pool of the same size (10) with named prepared statements.
 *
 *   GET  /tokens/:id   the one SELECT of a token by id and hub, answered as JSON
 *   POST /tokens       BEGIN; INSERT the token; INSERT its name into pki_names; COMMIT (the BEGIN/INSERT/COMMIT)
 *   POST /tokens/one   the same two inserts as one autocommitted statement (shown for information)
 *
 * Env: DATABASE_URL, PORT, BASELINE_HUB_ID. Not authenticated, no validation, no logging: the floor of the work.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.HUB_DB_POOL_MAX ?? 10) });
const hubId = process.env.BASELINE_HUB_ID!;

// token strings are kept sealed (AES-256-GCM) and found by their SHA-256, as the service keeps them (migration 0801):
// the baseline seals on insert and opens on read like the service does (~4 µs a read), with a key of its own
// (BASELINE_SECRET_KEY, hex: the same for the fresh limit processes of one run, so each reads what another wrote)
const key = process.env.BASELINE_SECRET_KEY ? Buffer.from(process.env.BASELINE_SECRET_KEY, 'hex') : randomBytes(32);
function seal(plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plain), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
}
function open(sealed: string): string {
  const [, iv, tag, data] = sealed.split('.');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

const COLUMNS = 'id, hub_id, name, token_sealed, common_name, organization, organizational_unit, valid_years, expires_at, created_at, created_by';
// the hub's condition as the service writes it (HUB_MATCHES in shared/db.ts): the row by its primary key only
const SELECT = { name: 'baseline-select', text: `SELECT ${COLUMNS} FROM certificate_request_tokens WHERE id = $1 AND hub_id IS NOT DISTINCT FROM $2` };
const INSERT_TOKEN = `INSERT INTO certificate_request_tokens (id, hub_id, name, token_sealed, token_digest, valid_years, expires_at, created_by, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, 1, now() + interval '7 days', 'baseline', now(), now()) RETURNING ${COLUMNS}`;
const INSERT_NAME = 'INSERT INTO pki_names (hub_id, name, token_id) VALUES ($1, $2, $3)';
const INSERT_BOTH = `WITH t AS (${INSERT_TOKEN}), n AS (INSERT INTO pki_names (hub_id, name, token_id) SELECT hub_id, name, id FROM t) SELECT * FROM t`;

const present = (r: Record<string, any>, tokenString?: string) => ({
  id: r.id,
  name: r.name,
  hubId: r.hub_id,
  token: tokenString ?? open(r.token_sealed),
  commonName: r.common_name,
  organization: r.organization,
  organizationalUnit: r.organizational_unit,
  validYears: r.valid_years,
  expiresAt: r.expires_at.toISOString(),
  createdAt: r.created_at.toISOString(),
  createdBy: r.created_by,
});

function send(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: http.IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const server = http.createServer(async (req, res) => {
  try {
    const url = req.url ?? '';
    if (url === '/healthz') return send(res, 200, { status: 'ok' });
    if (req.method === 'GET' && url.startsWith('/tokens/')) {
      const { rows } = await pool.query({ ...SELECT, values: [url.slice('/tokens/'.length), hubId] });
      return rows[0] ? send(res, 200, present(rows[0])) : send(res, 404, { error: 'not_found' });
    }
    if (req.method === 'POST' && (url === '/tokens' || url === '/tokens/one')) {
      const { name } = await readJson(req);
      const tokenString = randomBytes(24).toString('base64url');
      const values = [randomUUID(), hubId, name, seal(tokenString), createHash('sha256').update(tokenString).digest()];
      if (url === '/tokens/one') {
        const { rows } = await pool.query({ name: 'baseline-insert-both', text: INSERT_BOTH, values });
        return send(res, 201, present(rows[0], tokenString));
      }
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const { rows } = await client.query({ name: 'baseline-insert-token', text: INSERT_TOKEN, values });
        await client.query({ name: 'baseline-insert-name', text: INSERT_NAME, values: [hubId, name, values[0]] });
        await client.query('COMMIT');
        return send(res, 201, present(rows[0], tokenString));
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    }
    send(res, 404, { error: 'not_found' });
  } catch (err) {
    send(res, 500, { error: 'internal_error', message: (err as Error).message });
  }
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
});
