/**
 * Forged writes through the queue UI, in a real browser (Debian's chromium driven by playwright-core). The operator
 * signs in to /admin/queues (the browser then holds the Basic credentials and the session cookie); a page of another
 * site, and a page a share serves (same site as the API when shares sit under the API's domain, so the SameSite=Strict
 * cookie goes along), auto-submit url-encoded, text/plain and multipart forms to bull-board's "add job" route. No
 * job may appear in any queue and no execution may run.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import type { Browser, BrowserContext } from 'playwright-core';
import { launchChromium } from '../helpers/console.js';
import { resetConfig } from '../../shared/config.js';
import { BOARD_QUEUES, queue } from '../../domain/jobs/queues.js';
import { routedShare, startBackend, useTestEdge, type Backend } from '../helpers/edge.js';
import { useStack } from '../helpers/stack.js';

const stack = useStack(test);
const edge = useTestEdge(test, stack);
let browser: Browser;
let operator: BrowserContext;
let attacker: Backend;
let otherSite: http.Server;
let api: string;
let shareOrigin: string;
let otherOrigin: string;

const ENCTYPES = ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data'];

/** An attacker's page: one form that submits itself on load. */
function forgery(action: string, enctype: string): string {
  const fields =
    enctype === 'text/plain'
      ? // text/plain sends `name=value`: the pair spells a JSON body
        `<input type="hidden" name='{"name":"metrics.rollUp","data":{"hubId":null,"payload":{},"x":"' value='"}}'>`
      : `<input type="hidden" name="name" value="metrics.rollUp"><input type="hidden" name="data[payload][x]" value="1">`;
  return `<!doctype html><html><body><form method="POST" action="${action}" enctype="${enctype}">${fields}</form>
<script>document.forms[0].submit()</script></body></html>`;
}

function attackerHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const enctype = url.searchParams.get('enctype') ?? ENCTYPES[0];
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.end(forgery(`${api}/admin/queues/api/queues/metrics/add`, enctype));
}

stack.onStop(async () => {
  await browser?.close();
  await attacker?.close();
  await new Promise((resolve) => otherSite?.close(resolve));
});

test.serial.before(async () => {
  // the service's own origin is a name under which shares sit too: the case where a share is the API's site
  const port = new URL(stack.baseUrl).port;
  api = `http://share.localhost:${port}`;
  process.env.PUBLIC_BASE_URL = api;
  resetConfig();
  attacker = await startBackend(attackerHandler);
  otherSite = http.createServer(attackerHandler);
  await new Promise<void>((resolve) => otherSite.listen(0, '127.0.0.1', resolve));
  otherOrigin = `http://127.0.0.1:${(otherSite.address() as AddressInfo).port}`;
  const hub = await stack.hub({ name: 'evil' });
  const share = await routedShare(edge, hub, { name: 'evil', target: attacker.url });
  shareOrigin = `http://${share.host}:${edge.httpPort}`;
  browser = await launchChromium(['--host-resolver-rules=MAP *.localhost 127.0.0.1']);
  operator = await browser.newContext({ httpCredentials: { username: 'admin', password: stack.adminToken, origin: api } });
});

/** Every job of every queue (the share's own provisioning jobs among them), as `queue/id name`. */
async function jobsInQueues(): Promise<string[]> {
  const all: string[] = [];
  for (const name of BOARD_QUEUES) {
    for (const job of await queue(name).getJobs(['wait', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children'])) {
      if (job) all.push(`${name}/${job.id} ${job.name}`);
    }
  }
  return all.sort();
}

test.serial('the operator signs in to the queue UI: the browser holds the credentials and the session cookie', async (t) => {
  const page = await operator.newPage();
  const answer = await page.goto(`${api}/admin/queues`);
  t.is(answer?.status(), 200);
  t.regex(await page.content(), /<html/i);
  // the page's own scripts load the queues through its API (with the cookie): the UI works
  await page.getByText('health-checks').first().waitFor({ timeout: 20_000 });
  const cookies = await operator.cookies();
  t.truthy(cookies.find((c) => c.name === 'edgehub_queues' && c.httpOnly && c.sameSite === 'Strict'));
  await page.close();
});

for (const [where, origin] of [
  ['a page of another site', () => otherOrigin],
  ["a page a share serves (the API's site)", () => shareOrigin],
] as const) {
  test.serial(`forms from ${where} add no job, whatever their encoding`, async (t) => {
    const jobsBefore = await jobsInQueues();
    const executionsBefore = (await stack.sql.query('SELECT count(*)::int AS n FROM executions')).rows[0].n;
    for (const enctype of ENCTYPES) {
      const page = await operator.newPage();
      const added = page.waitForResponse((r) => r.url().endsWith('/admin/queues/api/queues/metrics/add') && r.status() !== 401);
      await page.goto(`${origin()}/?enctype=${encodeURIComponent(enctype)}`);
      const answer = await added;
      t.true(answer.status() >= 400, `${enctype}: answered ${answer.status()}`);
      t.not(answer.status(), 200);
      await page.close();
    }
    t.deepEqual(await jobsInQueues(), jobsBefore, 'no job was added to any queue');
    // a worker that had been handed a job would have recorded an execution of it
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.is((await stack.sql.query('SELECT count(*)::int AS n FROM executions')).rows[0].n, executionsBefore, 'nothing ran');
  });
}
