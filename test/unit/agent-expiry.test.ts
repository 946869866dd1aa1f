/**
 * An agent's certificate has an end (a year after enrollment). `edgehub agent run` with an expired one refuses to
 * start and says what to do (every edge would refuse it, and the agent would only retry); within 30 days of the end
 * it says so when it starts (and once a day while it runs). The identity folders here are written by hand, with
 * certificates of chosen validity.
 */
import { spawn } from 'node:child_process';
import test from 'ava';
import { edgehubCli } from '../helpers/agents.js';
import { writeAgentIdentity } from '../helpers/agentIdentity.js';
import { waitFor } from '../helpers/stack.js';

const DAY = 24 * 60 * 60_000;

const identityValid = (notBefore: Date, notAfter: Date) => writeAgentIdentity(notBefore, notAfter);

test('an expired certificate: agent run refuses to start, names the date and how to enroll again', async (t) => {
  const end = new Date(Date.now() - 2 * DAY);
  const dir = await identityValid(new Date(Date.now() - 400 * DAY), end);
  const r = await edgehubCli(['agent', 'run', '--dir', dir]);
  t.is(r.code, 1, r.stderr);
  t.regex(r.stderr, new RegExp(`the certificate of agent agent-1 expired at ${end.toISOString().slice(0, 16)}`));
  t.regex(r.stderr, /edgehub agent enroll <jwt>/);
  t.regex(r.stderr, /POST \/hub\/hub-1\/environments\/env1\/agent-enrollment/);
  t.notRegex(r.stdout, /running/);
});

/** `edgehub agent run` with the identity in `dir`: everything it printed once it said it runs (it is stopped then). */
async function startedOutput(dir: string): Promise<string> {
  const child = spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  try {
    await waitFor(async () => /running \(.*Ctrl-C stops it/.test(output), { what: 'the agent running', timeoutMs: 10_000 });
    return output;
  } finally {
    child.kill('SIGINT'); // at once (SIGTERM would drain)
  }
}

test('a certificate within 30 days of its end: agent run starts and warns', async (t) => {
  const output = await startedOutput(await identityValid(new Date(Date.now() - DAY), new Date(Date.now() + 10 * DAY + 60_000)));
  t.regex(output, /warning: the certificate of agent agent-1 expires at \S+ \(in 10 days\)/);
});

test('a certificate far from its end: no word of it', async (t) => {
  const output = await startedOutput(await identityValid(new Date(Date.now() - DAY), new Date(Date.now() + 300 * DAY)));
  t.notRegex(output, /expire/);
});
