import { spawn, type ChildProcess } from 'node:child_process';
import test from 'ava';
import { makeCsr, opensslVerify } from '../helpers/pki.js';
import { useStack } from '../helpers/stack.js';
import { scriptArgs } from '../helpers/script.js';

// the API runs here without workers; issuance happens in a separate worker process, as in production
const stack = useStack(test, { workers: false });
stack.onStop(async () => {
  if (worker && worker.exitCode === null) {
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.kill('SIGTERM');
    await exited;
  }
});
let worker: ChildProcess;
test.before(async () => {
  worker = spawn(process.execPath, scriptArgs('workers/index.ts'), { env: { ...process.env, HUB_PROCESS: 'worker' }, stdio: 'ignore' });
});

test('the web process waits for the worker process and answers with the issued certificate', async (t) => {
  const hub = await stack.hub();
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'remote', commonName: 'remote.example.com' } });
  const jwt = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  // five devices (five keys) racing for one JWT; a retry with the winner's own key would get its certificate
  const csrs = await Promise.all(Array.from({ length: 5 }, () => makeCsr('/CN=remote.example.com')));
  const results = await Promise.all(csrs.map((csr) => stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt: jwt.json.jwt, csr } })));
  t.deepEqual(results.map((r) => r.status).sort(), [201, 403, 403, 403, 403]);
  const issued = results.find((r) => r.status === 201)!;
  t.true((await opensslVerify(issued.json.value, issued.json.chain)).ok);
  const executions = await hub.call('GET', `${hub.h}/executions?size=50`);
  const issuances = executions.json.content.filter((e: { type: string }) => e.type === 'pki.issueCertificate');
  // a request that arrives after the spend is refused before any job; the others each ran one execution
  t.true(issuances.length >= 1 && issuances.length <= 5);
  t.is(issuances.filter((e: { status: string }) => e.status === 'SUCCEEDED').length, 1);
  for (const e of issuances.filter((e: { status: string }) => e.status !== 'SUCCEEDED')) {
    t.is(e.status, 'FAILED');
    t.true((e.error ?? '').startsWith('EH_TOKEN_SPENT: '), `the refusal the worker decided, not a crash: ${e.error}`);
  }
});
