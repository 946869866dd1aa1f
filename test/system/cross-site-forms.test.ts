/**
 * Forged changes of state in a real browser (Debian's chromium driven by playwright-core), as an attacker would send
 * them: the operator signs in to /admin/queues with Basic (the browser then adds that login to every request under
 * /admin/, the operator API's included); a page of another site, and a page of another origin on the same site,
 * auto-submit empty forms (text/plain, url-encoded, multipart: no body for the JSON check to refuse) to
 * `POST /admin/v1/signing-keys:rotate`. The active signing key must not change. The same with a hub's API key held
 * as a Basic login against a hub route that takes an empty body (an agent enrollment JWT, a credential, would be
 * made). The service's own pages (same origin) still change state.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../helpers/console.js';
import { type HubFixture, useStack } from '../helpers/stack.js';

const stack = useStack(test);
let browser: Browser;
let attacker: http.Server;
let api: string;
let hub: HubFixture;
let envZId: string;
/** Pages of another site (a name of its own) and of another origin on the API's site (its address, another port). */
const attackers: Record<string, string> = {};

const ENCTYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'];

/** An attacker's page: an empty form to `action` that submits itself on load. */
function attackerHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const action = url.searchParams.get('action') ?? '/';
  const enctype = url.searchParams.get('enctype') ?? ENCTYPES[0];
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.end(`<!doctype html><html><body><form method="POST" action="${api}${action}" enctype="${enctype}"></form>
<script>document.forms[0].submit()</script></body></html>`);
}

stack.onStop(async () => {
  await browser?.close();
  await new Promise((resolve) => attacker?.close(resolve));
});

test.serial.before(async () => {
  api = stack.baseUrl;
  attacker = http.createServer(attackerHandler);
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  const port = (attacker.address() as AddressInfo).port;
  attackers['another site'] = `http://evil.localhost:${port}`;
  attackers["another origin of the API's site"] = `http://127.0.0.1:${port}`;
  hub = await stack.hub({ name: 'victim' });
  const env = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'victim' } });
  envZId = env.json.envZId;
  browser = await launchChromium(['--host-resolver-rules=MAP *.localhost 127.0.0.1']);
});

const activeKid = async () => (await stack.sql.query(`SELECT kid FROM signing_keys WHERE status = 'ACTIVE'`)).rows[0]?.kid as string;
const agentEnrollments = async () => (await stack.sql.query('SELECT count(*)::int AS n FROM agent_enrollments')).rows[0].n as number;

/** Opens the attacker's page in `context` and returns the status the API answered its form with. */
async function forge(context: BrowserContext, origin: string, action: string, enctype: string): Promise<number> {
  const page = await context.newPage();
  try {
    const answered = page.waitForResponse((r) => r.url() === `${api}${action}` && r.request().method() === 'POST' && r.status() !== 401);
    await page.goto(`${origin}/?action=${encodeURIComponent(action)}&enctype=${encodeURIComponent(enctype)}`);
    return (await answered).status();
  } finally {
    await page.close();
  }
}

/** A POST from a page of the API's own origin (what the console does), as `fetch` sends it there. */
async function sameOrigin(page: Page, path: string, headers: Record<string, string>): Promise<number> {
  return page.evaluate(async ([p, h]) => (await fetch(p, { method: 'POST', headers: h })).status, [path, headers] as const);
}

test.serial("after a Basic login to the queue UI, forms of other origins cannot rotate the signing key; the service's own page can", async (t) => {
  const operator = await browser.newContext({ httpCredentials: { username: 'admin', password: stack.adminToken, origin: api } });
  try {
    const login = await operator.newPage();
    t.is((await login.goto(`${api}/admin/queues`))?.status(), 200, 'the operator is signed in');
    const kid = await activeKid();
    for (const [where, origin] of Object.entries(attackers)) {
      for (const enctype of ENCTYPES) {
        const status = await forge(operator, origin, '/admin/v1/signing-keys:rotate', enctype);
        t.is(status, 403, `${where}, ${enctype}`);
      }
    }
    t.is(await activeKid(), kid, 'the active signing key did not change');

    // the browser does hold the login: a request of the API's own origin with it (and JSON) rotates
    const own = await sameOrigin(login, '/admin/v1/signing-keys:rotate', { 'content-type': 'application/json' });
    t.is(own, 200);
    t.not(await activeKid(), kid, 'rotated from the own origin');
    // ... and without JSON it is refused even there (415): Basic always needs JSON
    t.is(await sameOrigin(login, '/admin/v1/signing-keys:rotate', {}), 415);
    // the console's way: the token as Bearer, no body, no content type
    const before = await activeKid();
    t.is(await sameOrigin(login, '/admin/v1/signing-keys:rotate', { authorization: `Bearer ${stack.adminToken}` }), 200);
    t.not(await activeKid(), before);
  } finally {
    await operator.close();
  }
});

test.serial("a browser holding a hub key's Basic login: forms of other origins cannot make an agent enrollment", async (t) => {
  // how the browser came to hold it does not matter: every request it sends carries the hub key's Basic credentials
  const victim = await browser.newContext({ extraHTTPHeaders: { authorization: hub.basic } });
  try {
    const before = await agentEnrollments();
    const action = `${hub.h}/environments/${envZId}/agent-enrollment`;
    for (const [where, origin] of Object.entries(attackers)) {
      for (const enctype of ENCTYPES) t.is(await forge(victim, origin, action, enctype), 403, `${where}, ${enctype}`);
    }
    t.is(await agentEnrollments(), before, 'no agent enrollment was made');
    const own = await victim.newPage();
    await own.goto(`${api}/console`); // a page of the API whose policy lets it call the API (connect-src 'self')
    t.is(await sameOrigin(own, action, { 'content-type': 'application/json' }), 201, 'the own origin with JSON makes one');
    t.is(await agentEnrollments(), before + 1);
  } finally {
    await victim.close();
  }
});
